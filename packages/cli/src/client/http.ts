// The REST client of the CLI. Maps transport and HTTP failures onto exit codes.
//
// Built on node:http rather than fetch: fetch loads undici on first use, which costs
// ~190 ms of a ~300 ms `rankd run` on the machines we measure, more than the job itself.
// One keep-alive agent lets the submit and the log stream of `rankd run` share a
// connection; its idle sockets are unref'd, so they never hold the process open.
import http from 'node:http';
import type { IncomingMessage } from 'node:http';
import { CliError, ExitCode } from '../exit-codes.js';
import type { ClientConfig } from './config.js';

export interface RequestOptions {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** For the whole exchange, body included; streams opened with a signal have none. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

let agents: { http: http.Agent; https?: http.Agent } | undefined;

export async function request<T>(config: ClientConfig, path: string, options: RequestOptions = {}): Promise<T> {
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
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Opens a response stream (logs); non-2xx throws with the controller's reason. */
export async function send(config: ClientConfig, path: string, options: RequestOptions = {}): Promise<IncomingMessage> {
  const res = await open(config, path, options);
  if (!ok(res)) throw httpError(res.statusCode ?? 0, await readText(res, config));
  return res;
}

async function open(config: ClientConfig, path: string, options: RequestOptions): Promise<IncomingMessage> {
  const { method = 'GET', body, signal } = options;
  // concatenated, not resolved: a controller behind a path prefix (http://gw/rankd) keeps it
  const url = new URL(config.url.replace(/\/+$/, '') + path);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const client = url.protocol === 'https:' ? await import('node:https') : http;
  agents ??= { http: new http.Agent({ keepAlive: true }) };
  const agent = url.protocol === 'https:' ? (agents.https ??= new (client as typeof import('node:https')).Agent({ keepAlive: true })) : agents.http;
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
      else reject(new CliError(`cannot reach the controller at ${config.url}: ${err.code ?? err.message}`, ExitCode.Unreachable));
    });
    req.end(payload);
  });
}

async function readText(res: IncomingMessage, config: ClientConfig): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res) chunks.push(chunk as Buffer);
  } catch (err) {
    throw new CliError(`lost the controller at ${config.url} mid-answer: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, ExitCode.Unreachable);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function ok(res: IncomingMessage): boolean {
  const status = res.statusCode ?? 0;
  return status >= 200 && status < 300;
}

function httpError(status: number, text: string): CliError {
  let message = text;
  try {
    const body = JSON.parse(text) as { code?: string; message?: string };
    message = body.code ? `${body.message} (${body.code})` : (body.message ?? text);
  } catch {
    // not JSON: keep the raw text
  }
  if (status === 401 || status === 403) return new CliError(`not authorized: ${message}`, ExitCode.Unauthorized);
  return new CliError(`controller answered ${status}: ${message}`, ExitCode.RemoteFailure);
}
