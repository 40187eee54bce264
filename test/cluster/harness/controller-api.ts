// Reaching the controller from the test process.
//
// The controller listens inside its own namespace, and the root namespace, where the
// test runs, has no way in: the bridge has no address there and the test range is an
// unreachable route. A forwarder inside the controller's namespace bridges a unix socket
// (a file, which every namespace sees) to the controller's TCP port, connection by
// connection. So REST calls and WebSockets from the test are real TCP connections to the
// controller's real address, and a restarted controller is reached again at once.
// They are TLS connections: the controller's CA is trusted (`ca`), its serving certificate
// names localhost, which is what a unix-socket connection verifies against.
import type http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { keyAndCsr } from '#agent/link/csr';
import { existsSync } from 'node:fs';
import WebSocket from 'ws';
import { spawnInNetns, type NsProcess } from './ns-process.js';

// Byte for byte, both ways. When the controller's side closes (or resets) first, the
// client's side is ended, not destroyed, and what it still sends is read and dropped:
// closing a socket with unread data sends a reset, and a reset makes the client's kernel
// drop what it had not read yet — the very answer (a 413, a close frame) that explains
// why the controller closed.
const FORWARDER = `
const net = require('node:net');
const fs = require('node:fs');
const [sock, host, port] = process.argv.slice(1);
fs.rmSync(sock, { force: true });
net.createServer((client) => {
  const upstream = net.connect(Number(port), host);
  client.pipe(upstream);
  upstream.pipe(client);
  let lingering = false;
  const linger = () => {
    if (lingering) return;
    lingering = true;
    client.unpipe(upstream);
    client.on('data', () => {});
    client.end();
    setTimeout(() => client.destroy(), 5000).unref();
  };
  upstream.on('error', linger);
  upstream.on('close', linger);
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
}).listen(sock, () => process.stdout.write('listening\\n'));
`;

export interface Forwarder {
  socketPath: string;
  process: NsProcess;
}

export async function startForwarder(
  netns: string,
  socketPath: string,
  host: string,
  port: number,
): Promise<Forwarder> {
  const proc = spawnInNetns(netns, [process.execPath, '-e', FORWARDER, socketPath, host, String(port)]);
  const deadline = Date.now() + 30_000;
  while (!proc.stdout().includes('listening') || !existsSync(socketPath)) {
    if (!proc.running()) throw new Error(`the forwarder exited: ${proc.output()}`);
    if (Date.now() > deadline) throw new Error(`the forwarder did not listen within 30 s: ${proc.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { socketPath, process: proc };
}

export interface ApiResponse<T> {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed JSON body, or the text when it is not JSON. */
  body: T;
}

export interface RequestOptions {
  method?: string;
  /** An object is sent as JSON; a string or Buffer as it is (malformed bodies included). */
  body?: unknown;
  /** null: no Authorization header; undefined: the API token. */
  token?: string | null;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export class ControllerApi {
  /**
   * Keep-alive connections, as a real client would hold them, each closed when idle 1 s
   * before the controller's announced Keep-Alive timeout (Node applies the hint only to an
   * agent with a timeout of its own): reused any later, it raced the controller's close
   * and failed with "socket hang up".
   */
  private readonly agent: https.Agent;

  constructor(
    readonly socketPath: string,
    public apiToken: string,
    readonly ca: string,
  ) {
    this.agent = new https.Agent({ keepAlive: true, timeout: 60_000, maxSockets: 32, ca });
  }

  /** Enrolls a node name as an agent would (a new key, a CSR, the join token): its TLS identity. */
  async enroll(name: string, joinToken: string): Promise<{ ca: string; cert: string; key: string }> {
    const { key, csr } = await keyAndCsr(name);
    const res = await this.request<{ certificate: string }>('/v1/enroll', {
      method: 'POST',
      token: null,
      body: { token: joinToken, csr },
    });
    if (res.status !== 200) throw new Error(`enrolling ${name}: ${res.status} ${res.text}`);
    return { ca: this.ca, cert: res.body.certificate, key };
  }

  request<T = unknown>(path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const token = opts.token === undefined ? this.apiToken : opts.token;
    let payload: Buffer | null = null;
    const headers: Record<string, string> = { host: 'rankd-controller', ...opts.headers };
    if (token) headers['authorization'] = `Bearer ${token}`;
    if (opts.body !== undefined) {
      payload = Buffer.isBuffer(opts.body)
        ? opts.body
        : Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = String(payload.length);
    }
    return new Promise((resolve, reject) => {
      // the Host header is not a name in the certificate; the unix-socket connection verifies localhost
      const req = https.request(
        {
          socketPath: this.socketPath,
          servername: 'localhost',
          path,
          method: opts.method ?? 'GET',
          headers,
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown = text;
            try {
              body = JSON.parse(text);
            } catch {
              // not JSON: leave the text
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: body as T });
          });
        },
      );
      req.setTimeout(opts.timeoutMs ?? 15_000, () =>
        req.destroy(new Error(`${opts.method ?? 'GET'} ${path}: no answer within ${opts.timeoutMs ?? 15_000} ms`)),
      );
      req.on('error', reject);
      req.end(payload ?? undefined);
    });
  }

  get<T = unknown>(path: string): Promise<ApiResponse<T>> {
    return this.request<T>(path);
  }

  /** A WebSocket to the controller's port (the agent gateway lives at /v1/agent). */
  websocket(
    path: string,
    opts: {
      protocols?: string[];
      headers?: Record<string, string>;
      maxPayload?: number;
      tls?: { cert: string; key: string };
    } = {},
  ): WebSocket {
    // ws has no wss+unix: a TLS connection over the forwarder's unix socket, verified as localhost
    const socketPath = this.socketPath;
    return new WebSocket(`wss://localhost${path}`, opts.protocols ?? [], {
      ca: this.ca,
      ...({
        createConnection: (o: tls.ConnectionOptions) =>
          tls.connect({ ...o, path: socketPath, servername: 'localhost' }),
      } as object),
      ...(opts.tls ?? {}),
      headers: opts.headers ?? {},
      perMessageDeflate: false,
      handshakeTimeout: 15_000,
      ...(opts.maxPayload ? { maxPayload: opts.maxPayload } : {}),
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
