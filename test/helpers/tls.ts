// TLS for tests: a fetch-alike over node:https that trusts a given CA (Node 20's fetch
// cannot be given one), and node identities enrolled the way agents do it.
import https from 'node:https';
import { Readable } from 'node:stream';
import WebSocket from 'ws';
import { pino } from 'pino';
import { enroll, type NodeIdentity } from '#agent/link/enroll';
import { scratchDir } from './scratch.js';

export interface TlsResponse {
  status: number;
  headers: { get(name: string): string | null };
  body: ReadableStream<Uint8Array>;
  text(): Promise<string>;
}

/** fetch(url, init) over HTTPS, verifying the server against `ca` (and presenting a client certificate when given). */
export function httpsFetch(
  url: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    ca: string;
    cert?: string;
    key?: string;
    signal?: AbortSignal;
  },
): Promise<TlsResponse> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, {
      method: init.method ?? 'GET',
      headers: {
        ...init.headers,
        ...(init.body !== undefined ? { 'content-length': String(Buffer.byteLength(init.body)) } : {}),
      },
      ca: init.ca,
      ...(init.cert ? { cert: init.cert, key: init.key } : {}),
      agent: false,
      ...(init.signal ? { signal: init.signal } : {}),
    });
    req.once('error', reject);
    req.once('response', (res) => {
      const body = Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>;
      resolve({
        status: res.statusCode ?? 0,
        headers: {
          get: (name) => {
            const v = res.headers[name.toLowerCase()];
            return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
          },
        },
        body,
        async text() {
          const chunks: Buffer[] = [];
          for await (const c of body as unknown as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(c));
          return Buffer.concat(chunks).toString('utf8');
        },
      });
    });
    req.end(init.body);
  });
}

/** Enrolls a node name with a join token, as an agent would, and returns its key, certificate and pinned CA. */
export async function enrollIdentity(
  controller: { url: string; joinToken: string; caHash: string },
  name: string,
  stateDir?: string,
): Promise<NodeIdentity> {
  return enroll({
    controller: controller.url,
    joinToken: controller.joinToken,
    caHash: controller.caHash,
    name,
    stateDir: stateDir ?? scratchDir('rankd-id-'),
    log: pino({ level: 'silent' }),
  });
}

const identities = new Map<string, Promise<NodeIdentity>>();

/** One enrolled identity per controller and node name, for tests that speak the gateway protocol by hand. */
export function identityFor(
  controller: { url: string; joinToken: string; caHash: string },
  name: string,
): Promise<NodeIdentity> {
  const key = `${controller.url}|${controller.caHash}|${name}`;
  let id = identities.get(key);
  if (!id) {
    id = enrollIdentity(controller, name);
    identities.set(key, id);
  }
  return id;
}

/** The agent gateway's URL (wss://…/v1/agent). */
export function gatewayUrl(controllerUrl: string): string {
  return controllerUrl.replace(/^https/, 'wss') + '/v1/agent';
}

/** Opens the agent gateway with a node identity: 101 when the upgrade is accepted, else the status and the refusal's code. */
export function upgradeWith(
  controllerUrl: string,
  id: { ca: string; cert: string; key: string },
): Promise<{ status: number; code: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(gatewayUrl(controllerUrl), ['rankd.v1'], {
      ca: id.ca,
      cert: id.cert,
      key: id.key,
      handshakeTimeout: 5000,
    });
    ws.on('open', () => {
      ws.terminate();
      resolve({ status: 101, code: '' });
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, code: (JSON.parse(body) as { code: string }).code }));
    });
    ws.on('error', () => undefined);
  });
}
