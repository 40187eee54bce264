// The agent gateway: WebSocket upgrades on /v1/agent.
//
// Authentication happens on the upgrade request itself: the connection must carry a node
// certificate issued by this controller's CA, unexpired and not revoked (checked here, at
// every handshake, against the store); without one the answer is a plain HTTP 401 with a
// stable code and no WebSocket ever exists. The node's name is the certificate's CN: the
// hello must say the same, and every message on the link speaks for that node only. Each
// refused upgrade is counted in the audit log per source, minute and code (anyone can cause
// one, so it is a count, not an entry each). Frames are capped at
// MAX_FRAME_BYTES (ws closes with 1009 above it) and compression is off, which keeps
// memory per connection small and flat.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { CloseCode, MAX_FRAME_BYTES, SUBPROTOCOL, ErrorCode, RankdError } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { NodeRegistry } from '../nodes/node-registry.js';
import type { RefusalEvent } from '../store/audit-refusals.js';
import type { Enrollment } from '../tls/enrollment.js';
import { peerNode } from '../tls/tls-setup.js';
import { AgentConnection, type LinkRttObserver } from './agent-connection.js';
import { AgentHandlerTable, type AgentHandlers, type Around } from './agent-handlers.js';
import { sessionHandlers } from './session-handlers.js';

export const AGENT_PATH = '/v1/agent';

/** Another WebSocket endpoint on the controller's port; it authenticates its own upgrades. */
export type UpgradeRoute = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** Told each refused agent upgrade (the audit log counts them). */
export type UpgradeRefused = (event: RefusalEvent) => void;

export class AgentGateway {
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<AgentConnection>();
  private readonly handlers = new AgentHandlerTable();
  private readonly pingTimer: NodeJS.Timeout;
  private readonly routes = new Map<string, UpgradeRoute>();

  constructor(
    server: Server,
    private readonly enrollment: Enrollment,
    private readonly registry: NodeRegistry,
    private readonly log: Logger,
    private readonly refused: UpgradeRefused,
    /** Told each link's ping round trip (the controller's metrics). */
    private readonly observeRtt?: LinkRttObserver,
  ) {
    this.handlers.add(sessionHandlers(registry, log));
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_FRAME_BYTES,
      perMessageDeflate: false,
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
    });
    server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    // A dead TCP peer sends no close; pings find it, once a TTL (15 s by default, scaled by
    // --heartbeat-ms), which keeps this off the hot path. Each pong also times the link.
    this.pingTimer = setInterval(() => {
      for (const conn of this.connections) conn.checkAlive();
    }, registry.timing.ttlMs);
    this.pingTimer.unref();
  }

  /**
   * Registers handlers of agent messages by type (jobs, exec, … add theirs); with `around`,
   * each call runs inside it. They run for authenticated connections only: after the hello.
   */
  handle(handlers: AgentHandlers, around?: Around): void {
    this.handlers.add(handlers, around);
  }

  /** Serves upgrades on another path (interactive shells, …) beside /v1/agent. */
  route(path: string, handler: UpgradeRoute): void {
    if (path === AGENT_PATH || this.routes.has(path)) throw new Error(`upgrade route registered twice: ${path}`);
    this.routes.set(path, handler);
  }

  get size(): number {
    return this.connections.size;
  }

  close(code: number, reason: string): void {
    clearInterval(this.pingTimer);
    for (const conn of this.connections) conn.shutDown(code, reason);
    this.connections.clear();
    this.wss.close();
  }

  /** Closes every link of a node whose certificate was just revoked; returns how many. */
  dropNode(node: string, reason: string): number {
    let n = 0;
    for (const conn of this.connections) {
      if (conn.certName !== node) continue;
      conn.close(CloseCode.Revoked, reason);
      n++;
    }
    return n;
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? '').split('?')[0];
    const route = this.routes.get(path ?? '');
    if (route) return route(req, socket, head);
    if (path !== AGENT_PATH)
      return refuse(socket, 404, 'Not Found', ErrorCode.NotFound, `no WebSocket endpoint at ${path}`);
    const peer = peerNode(req.socket);
    if (!peer.ok) {
      // an unverified certificate's name is the client's word: no principal
      this.log.warn({ remote: req.socket.remoteAddress, code: peer.code }, `agent upgrade refused: ${peer.message}`);
      return this.refuseUnauthorized(req, socket, null, peer.code, peer.message);
    }
    try {
      this.enrollment.checkSerial(peer.serial, peer.node);
    } catch (err) {
      const code = err instanceof RankdError ? err.code : ErrorCode.NodeCertInvalid;
      const why = err instanceof Error ? err.message : String(err);
      this.log.warn({ remote: req.socket.remoteAddress, node: peer.node, code }, `agent upgrade refused: ${why}`);
      return this.refuseUnauthorized(req, socket, peer.node, code, why);
    }
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
    if (!offered.includes(SUBPROTOCOL)) {
      return refuse(
        socket,
        400,
        'Bad Request',
        ErrorCode.BadFrame,
        `subprotocol ${SUBPROTOCOL} required (offered: ${offered.join(',') || 'none'})`,
      );
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new AgentConnection(
        ws,
        req.socket.remoteAddress ?? null,
        peer.node,
        this.registry,
        this.handlers,
        this.log,
        this.observeRtt,
      );
      this.connections.add(conn);
      ws.on('close', () => this.connections.delete(conn));
    });
  }

  /** 401 with the code, counted in the audit log under the node the certificate named (its CA signed it), if any. */
  private refuseUnauthorized(
    req: IncomingMessage,
    socket: Duplex,
    node: string | null,
    code: string,
    message: string,
  ): void {
    this.refused({
      source: req.socket.remoteAddress ?? 'unknown',
      user: node,
      role: node === null ? null : 'node',
      method: req.method ?? 'GET',
      route: AGENT_PATH,
      status: 401,
      code,
      reason: message,
    });
    refuse(socket, 401, 'Unauthorized', code, message);
  }
}

function refuse(socket: Duplex, status: number, text: string, code: string, message: string): void {
  const body = JSON.stringify({ statusCode: status, code, error: text, message });
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
