// What a connection may hold before it has proved anything.
//
// Each source address may hold at most `perSource` connections that carry no node
// certificate of this CA: TLS handshakes in progress, REST clients, browsers. One more is
// destroyed as it is accepted, before any handshake, and counted in the audit log
// (RANKD_TOO_MANY_CONNECTIONS, one entry per source and minute). A connection whose handshake
// presents a valid node certificate leaves the count at once, so enrolled agents never
// compete with anyone for these places, and a flood from one address takes no place from
// another.
//
// Time limits: a handshake must finish within `handshakeMs` (tls.Server's handshakeTimeout,
// set with the server options below); a connection that finished it must send the headers of
// its first request within `firstRequestMs`, and every request's headers within
// `headersMs` (Node's headersTimeout); a kept-alive connection idle for `keepAliveMs` is
// closed. Node's own headersTimeout starts only once a request's first byte arrives, hence
// the first-request timer here.
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

export interface ConnectionLimits {
  /** Connections without a node certificate that one source address may hold at once. */
  perSource: number;
  /** A TLS handshake must finish within this. */
  handshakeMs: number;
  /** After the handshake, the first request's headers must arrive within this. */
  firstRequestMs: number;
  /** Every request's headers must arrive within this once it has begun. */
  headersMs: number;
  /** The whole of a request (headers and body) must arrive within this. */
  requestMs: number;
  /** A kept-alive connection with no request for this long is closed. */
  keepAliveMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  perSource: 256,
  handshakeMs: 10_000,
  firstRequestMs: 10_000,
  headersMs: 10_000,
  requestMs: 60_000,
  keepAliveMs: 5_000,
};

/** The options of https.createServer that carry these limits (fastify passes its `https` options on). */
export function serverTimeouts(limits: ConnectionLimits) {
  return {
    handshakeTimeout: limits.handshakeMs,
    headersTimeout: limits.headersMs,
    requestTimeout: limits.requestMs,
    keepAliveTimeout: limits.keepAliveMs,
    // how often Node looks for requests past headersTimeout and requestTimeout (default 30 s)
    connectionsCheckingInterval: Math.min(1000, limits.headersMs),
  };
}

/** Told of each refused connection's source address. */
export type RefusedConnection = (source: string) => void;

export class ConnectionGuard {
  private readonly held = new Map<string, number>();
  // the raw socket of each connection still counted, and the TLS sockets still owing a first request
  private readonly releases = new WeakMap<Socket, () => void>();
  private readonly awaitingRequest = new WeakSet<Socket>();

  constructor(
    server: HttpsServer,
    private readonly limits: ConnectionLimits,
    private readonly onRefused: RefusedConnection,
  ) {
    // before tls.Server's own listener: a refused socket is closed before its handshake can begin
    server.prependListener('connection', (socket: Socket) => this.accept(socket));
    server.on('secureConnection', (socket: TLSSocket) => this.secured(socket));
    const firstRequest = (req: { socket: Socket }) => this.requestBegan(req.socket);
    server.on('request', firstRequest);
    server.on('upgrade', firstRequest);
  }

  /** Connections without a node certificate that `source` holds now. */
  heldBy(source: string): number {
    return this.held.get(source) ?? 0;
  }

  private accept(socket: Socket): void {
    const source = socket.remoteAddress ?? 'unknown';
    const n = this.heldBy(source);
    if (n >= this.limits.perSource) {
      socket.destroy();
      this.onRefused(source);
      return;
    }
    this.held.set(source, n + 1);
    let counted = true;
    const release = (): void => {
      if (!counted) return;
      counted = false;
      const left = this.heldBy(source) - 1;
      if (left > 0) this.held.set(source, left);
      else this.held.delete(source);
    };
    this.releases.set(socket, release);
    socket.once('close', release);
  }

  private secured(socket: TLSSocket): void {
    if (socket.authorized) {
      // a node certificate of this CA (whether it is revoked is the gateway's check): an agent
      const raw = (socket as unknown as { _parent?: Socket })._parent;
      if (raw) this.releases.get(raw)?.();
      return;
    }
    this.awaitingRequest.add(socket);
    socket.setTimeout(this.limits.firstRequestMs, () => {
      if (this.awaitingRequest.has(socket)) socket.destroy();
    });
  }

  private requestBegan(socket: Socket): void {
    if (!this.awaitingRequest.delete(socket)) return;
    // from here on Node's header, request and keep-alive timeouts apply
    socket.setTimeout(0);
  }
}
