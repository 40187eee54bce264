// The REST client of the CLI. Maps transport and HTTP failures onto exit codes.
//
// Built on node:http rather than fetch: fetch loads undici on first use, which costs a
// short `rankd run` more start-up time than its job takes.
// One keep-alive agent lets the submit and the log stream of `rankd run` share a
// connection; its idle sockets are unref'd, so they never hold the process open.
// The controller speaks HTTPS only; it is verified against the client config's `ca`
// (RANKD_CA) by PinnedCaAgent, which spares Node 20 building its bundled root store
// (pinned-ca.ts). node:https (and TLS) is loaded on the first request, not at start-up.
import { readFileSync } from 'node:fs';
import type { Agent as HttpAgent, IncomingMessage } from 'node:http';
import { CliError, ExitCode } from '../exit-codes.js';
import type { PlacementSpec } from '@rankd/protocol';
import { httpsUrl, type ClientConfig } from './config.js';

export interface RequestOptions {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** For the whole exchange, body included; streams opened with a signal have none. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** One keep-alive agent per scheme and CA file. */
const agents = new Map<string, HttpAgent>();

/**
 * The agents' own socket timeout. Node applies a server's `Keep-Alive: timeout=N` hint only
 * to an agent that has one: an idle socket then closes 1 s before the controller's announced
 * 5 s, instead of being reused for a request the controller's close races (ECONNRESET).
 * A socket in use is not ended by it: a log stream may stay quiet for longer.
 */
const AGENT_OPTIONS = { keepAlive: true, timeout: 60_000 } as const;
const caCache = new Map<string, string>();

/** The PEM of the configured CA file (read once); undefined means the system's roots. */
export function readCa(config: ClientConfig): string | undefined {
  if (!config.ca) return undefined;
  let pem = caCache.get(config.ca);
  if (pem === undefined) {
    try {
      pem = readFileSync(config.ca, 'utf8');
    } catch (err) {
      throw new CliError(
        `cannot read the CA file ${config.ca} (client config "ca" or RANKD_CA): ${(err as Error).message}`,
        ExitCode.Software,
      );
    }
    caCache.set(config.ca, pem);
  }
  return pem;
}

/** A transport error in words: TLS verification failures say what to fix. */
export function reachError(config: ClientConfig, err: NodeJS.ErrnoException): CliError {
  const code = err.code ?? err.message;
  if (/CERT|SELF_SIGNED|UNABLE_TO|ALTNAME|PURPOSE|SSL|TLS/i.test(code)) {
    return new CliError(
      `the controller at ${config.url} is not trusted (${code}): point "ca" in the client config or RANKD_CA at its CA certificate`,
      ExitCode.Unreachable,
    );
  }
  return new CliError(`cannot reach the controller at ${config.url}: ${code}`, ExitCode.Unreachable);
}

/** One request and its whole answer, read as text; non-2xx throws with the controller's reason. */
export async function exchange(
  config: ClientConfig,
  path: string,
  options: RequestOptions = {},
): Promise<{ status: number; text: string }> {
  const { timeoutMs = 30_000 } = options;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let res: IncomingMessage;
  let text: string;
  try {
    res = await open(config, path, { ...options, signal });
    text = await readText(res, config);
  } catch (err) {
    if (timeout.aborted && !options.signal?.aborted) {
      throw new CliError(`the controller at ${config.url} did not answer within ${timeoutMs} ms`, ExitCode.Unreachable);
    }
    throw err;
  }
  if (!ok(res)) throw httpError(res.statusCode ?? 0, text);
  return { status: res.statusCode ?? 0, text };
}

/** Opens a response stream (logs); non-2xx throws with the controller's reason. */
export async function send(config: ClientConfig, path: string, options: RequestOptions = {}): Promise<IncomingMessage> {
  const res = await open(config, path, options);
  if (!ok(res)) throw httpError(res.statusCode ?? 0, await readText(res, config));
  return res;
}

async function open(config: ClientConfig, path: string, options: RequestOptions): Promise<IncomingMessage> {
  const { method = 'GET', body, signal } = options;
  // concatenated, not resolved: a controller behind a path prefix (https://gw/rankd) keeps it;
  // checked again here, whoever built the config: the token goes over TLS or not at all
  const url = new URL(httpsUrl(config.url, 'the controller URL') + path);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const client = await import('node:https');
  const agent = await httpsAgent(config);
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = client.request(url, {
      method,
      agent,
      signal,
      headers: {
        ...options.headers,
        authorization: `Bearer ${config.token}`,
        ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
      },
    });
    req.once('response', resolve);
    req.once('error', (err: NodeJS.ErrnoException) => {
      if (signal?.aborted) reject(err);
      else reject(reachError(config, err));
    });
    req.end(payload);
  });
}

function agentFor(key: string, make: () => HttpAgent): HttpAgent {
  let agent = agents.get(key);
  if (!agent) agents.set(key, (agent = make()));
  return agent;
}

/** With a pinned CA, the agent that verifies against it alone; without one, Node's, against the system's roots. */
async function httpsAgent(config: ClientConfig): Promise<HttpAgent> {
  const ca = readCa(config);
  if (!ca) {
    const { Agent } = await import('node:https');
    return agentFor('https:', () => new Agent(AGENT_OPTIONS));
  }
  const { PinnedCaAgent } = await import('./pinned-agent.js');
  return agentFor(`https:${config.ca}`, () => new PinnedCaAgent(AGENT_OPTIONS, ca));
}

async function readText(res: IncomingMessage, config: ClientConfig): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res) chunks.push(chunk as Buffer);
  } catch (err) {
    throw new CliError(
      `lost the controller at ${config.url} mid-answer: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      ExitCode.Unreachable,
    );
  }
  return Buffer.concat(chunks).toString('utf8');
}

function ok(res: IncomingMessage): boolean {
  const status = res.statusCode ?? 0;
  return status >= 200 && status < 300;
}

function httpError(status: number, text: string): CliError {
  let message = text;
  let suggestion: Partial<PlacementSpec> | undefined;
  try {
    const body = JSON.parse(text) as { code?: string; message?: string; suggestion?: Partial<PlacementSpec> };
    message = body.code ? `${body.message} (${body.code})` : (body.message ?? text);
    if (typeof body.suggestion === 'object' && body.suggestion !== null) suggestion = body.suggestion;
  } catch {
    // not JSON: keep the raw text
  }
  if (status === 401 || status === 403) return new CliError(`not authorized: ${message}`, ExitCode.Unauthorized);
  return new CliError(`controller answered ${status}: ${message}`, ExitCode.RemoteFailure, suggestion);
}
