// The agent's link to the controller: dial, hello, heartbeat, detect a dead link,
// reconnect with backoff — forever, until stopped.
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import {
  CloseCode,
  ControllerMessages,
  ErrorCode,
  MAX_FRAME_BYTES,
  RankdError,
  SUBPROTOCOL,
  decodeFrame,
  encodeBinaryFrame,
  frameBytes,
  isMessageOf,
  type AgentBinaryMessage,
  type AgentMessage,
  type ControllerMessage,
  type Heartbeat,
  type Hello,
  type Message,
  type Welcome,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import { Backoff } from './backoff.js';

export type ControllerMessageType = ControllerMessage['type'];
/** The handler of the controller's messages of `type` K: it receives that message, validated. */
export type ControllerHandler<K extends ControllerMessageType> = (message: Message<ControllerMessage, K>) => void;

export interface ControllerLinkOptions {
  /** http(s):// or ws(s):// URL of the controller; the path /v1/agent is added. */
  controllerUrl: string;
  /** The node's certificate, key and pinned CA, read at each connect (renewal replaces them). */
  tls: () => { ca: string; cert: string; key: string };
  /** Whether a renewal is under way: its answer may revoke the certificate in use a moment before replacing it. */
  renewing?: () => boolean;
  log: Logger;
  /** Builds the hello for each new connection (facts are re-read then). */
  hello: () => Hello;
  backoff?: { baseMs: number; capMs: number };
}

/** Heartbeat intervals without a pong or a frame before the link is declared dead. */
const MAX_UNANSWERED = 3;

export class ControllerLink extends EventEmitter<{ ready: [Welcome]; down: [string]; fatal: [RankdError] }> {
  private ws: WebSocket | null = null;
  private readonly handlers = new Map<string, (message: ControllerMessage) => void>();
  private readonly backoff: Backoff;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private seq = 0;
  private stopped = false;
  /** Pings sent since the controller was last heard from (a pong or any frame). */
  private unanswered = 0;
  /** Set while a welcome has been received on the current socket. */
  welcome: Welcome | null = null;

  constructor(private readonly options: ControllerLinkOptions) {
    super();
    this.backoff = new Backoff(options.backoff ?? { baseMs: 250, capMs: 30_000 });
    this.handle('welcome', (m) => this.onWelcome(m));
    this.handle('error', (m) =>
      options.log.warn({ code: m.code, inReplyTo: m.inReplyTo }, `controller refused a frame: ${m.message}`),
    );
  }

  static agentUrl(controllerUrl: string): string {
    const url = new URL(controllerUrl);
    if (url.protocol === 'http:') url.protocol = 'ws:';
    else if (url.protocol === 'https:') url.protocol = 'wss:';
    url.pathname = url.pathname.replace(/\/+$/, '') + '/v1/agent';
    return url.toString();
  }

  /** Registers the handler of a controller message type (jobs, exec, … add theirs). */
  handle<K extends ControllerMessageType>(type: K, handler: ControllerHandler<K>): void {
    if (this.handlers.has(type)) throw new Error(`controller message handler registered twice: ${type}`);
    this.handlers.set(type, (message) => {
      if (isMessageOf(message, type)) handler(message);
    });
  }

  start(): void {
    this.stopped = false;
    this.connect();
  }

  /** Sends a message if the link is up; returns false when it is not (the caller keeps its state). */
  send(message: AgentMessage): boolean {
    const ws = this.registered();
    ws?.send(JSON.stringify(message));
    return ws !== null;
  }

  /** Sends a header and raw bytes as one binary frame (rank output); false when the link is down. */
  sendBinary(header: AgentBinaryMessage, payload: Uint8Array): boolean {
    const ws = this.registered();
    ws?.send(encodeBinaryFrame(header, payload), { binary: true });
    return ws !== null;
  }

  /** The socket, while it is open and the controller has welcomed us; else null. */
  private registered(): WebSocket | null {
    return this.ws && this.ws.readyState === WebSocket.OPEN && this.welcome ? this.ws : null;
  }

  /** Bytes queued on the socket, for senders that must respect backpressure. */
  get bufferedAmount(): number {
    return this.ws?.bufferedAmount ?? 0;
  }

  get connected(): boolean {
    return this.welcome !== null && this.ws?.readyState === WebSocket.OPEN;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.stopHeartbeat();
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close(1000, 'agent stopping');
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 1000).unref();
    });
  }

  private connect(): void {
    const { log } = this.options;
    const url = ControllerLink.agentUrl(this.options.controllerUrl);
    const tls = this.options.tls();
    // A refusal of a certificate that a renewal has since replaced (renewal revokes the old
    // one) says nothing about the current one: dial again with it instead of giving up.
    const superseded = () => this.options.tls().cert !== tls.cert || (this.options.renewing?.() ?? false);
    const ws = new WebSocket(url, [SUBPROTOCOL], {
      ...tls,
      maxPayload: MAX_FRAME_BYTES,
      perMessageDeflate: false,
      handshakeTimeout: 10_000,
    });
    this.ws = ws;
    ws.on('open', () => {
      log.info({ url }, 'connected to controller');
      ws.send(JSON.stringify(this.options.hello()));
    });
    ws.on('message', (data, isBinary) => this.onFrame(frameBytes(data), isBinary));
    ws.on('pong', () => (this.unanswered = 0));
    ws.on('unexpected-response', (_req, res) => {
      // The controller answers a refused upgrade with a plain HTTP status and a stable code: say which.
      let body = '';
      res.on('data', (d: Buffer) => (body = (body + d.toString()).slice(0, 4096)));
      res.once('end', () => {
        const { code, message } = upgradeRefusal(body);
        const why = `upgrade refused with HTTP ${res.statusCode}: ${message}${code ? ` (${code})` : ''}`;
        log.error({ url, status: res.statusCode, code }, why);
        ws.terminate();
        // a revoked or expired certificate will never be accepted again: stop, loudly
        if (
          (code === ErrorCode.NodeCertRevoked ||
            code === ErrorCode.NodeCertExpired ||
            code === ErrorCode.NodeCertInvalid) &&
          !superseded()
        ) {
          this.stopped = true;
          this.emit('fatal', new RankdError(code, why));
          return;
        }
        this.scheduleReconnect(why);
      });
    });
    ws.on('error', (err) => log.warn({ url, err: err.message }, 'controller link error'));
    ws.on('close', (code, reason) => {
      if (this.ws !== ws) return;
      if ((code === CloseCode.Revoked && !superseded()) || code === CloseCode.IdentityMismatch) {
        const why = `the controller closed the link for good: ${code} ${reason.toString()}`;
        log.error({ code }, why);
        this.stopped = true;
        this.welcome = null;
        this.stopHeartbeat();
        this.emit('down', why);
        this.emit(
          'fatal',
          new RankdError(code === CloseCode.Revoked ? ErrorCode.NodeCertRevoked : ErrorCode.NodeIdentityMismatch, why),
        );
        return;
      }
      this.scheduleReconnect(`closed ${code}${reason.length ? ' ' + reason.toString() : ''}`);
    });
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    this.unanswered = 0;
    if (isBinary) return;
    const decoded = decodeFrame(data, ControllerMessages);
    if (!decoded.ok) {
      this.options.log.warn({ code: decoded.code, error: decoded.error }, 'refused controller frame');
      this.send({
        type: 'error',
        code: decoded.code,
        message: decoded.error,
        ...(decoded.type ? { inReplyTo: decoded.type } : {}),
      });
      return;
    }
    const handler = this.handlers.get(decoded.type);
    if (!handler) {
      this.send({
        type: 'error',
        code: ErrorCode.UnknownType,
        message: `agent has no handler for "${decoded.type}"`,
        inReplyTo: decoded.type,
      });
      return;
    }
    try {
      handler(decoded.message);
    } catch (err) {
      this.options.log.error({ err, type: decoded.type }, 'controller message handler failed');
    }
  }

  private onWelcome(welcome: Welcome): void {
    this.welcome = welcome;
    this.backoff.reset();
    this.stopHeartbeat();
    this.unanswered = 0;
    this.heartbeatTimer = setInterval(() => this.beat(), welcome.heartbeatMs);
    this.options.log.info({ heartbeatMs: welcome.heartbeatMs }, 'registered with controller');
    this.emit('ready', welcome);
  }

  private beat(): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    // Silence for MAX_UNANSWERED intervals means the link is dead even if TCP has not
    // noticed. One late pong is not enough: a controller busy for a moment (a large job
    // start, a loaded machine) would otherwise cost every agent its session at once.
    if (this.unanswered >= MAX_UNANSWERED) {
      this.options.log.warn({ intervals: this.unanswered }, 'controller silent; reconnecting');
      ws.terminate();
      return;
    }
    this.unanswered++;
    ws.ping();
    const heartbeat: Heartbeat = { type: 'heartbeat', seq: this.seq++ };
    ws.send(JSON.stringify(heartbeat));
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  private scheduleReconnect(why: string): void {
    const wasUp = this.welcome !== null;
    this.welcome = null;
    this.stopHeartbeat();
    if (wasUp) this.emit('down', why);
    if (this.stopped || this.reconnectTimer) return;
    const delay = this.backoff.next();
    this.options.log.info({ why, delayMs: delay }, 'controller link down; reconnecting');
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.stopped) this.connect();
    }, delay);
  }
}

/** The stable code and message of a refused upgrade's body (JSON from the controller, or text from anything else). */
function upgradeRefusal(body: string): { code: string; message: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { code: '', message: body };
  }
  if (typeof parsed !== 'object' || parsed === null) return { code: '', message: body };
  const code = 'code' in parsed && typeof parsed.code === 'string' ? parsed.code : '';
  const message = 'message' in parsed && typeof parsed.message === 'string' ? parsed.message : body;
  return { code, message };
}
