// One agent's WebSocket, from hello to close.
//
// The first frame must be a valid hello; after that, frames are dispatched through
// the gateway's Map of handlers. A frame that fails to decode gets an error frame
// and the connection stays up: one bad message must not cost a node its link.
import { createHash } from 'node:crypto';
import type { WebSocket } from 'ws';
import {
  AgentBinaryMessages,
  AgentMessages,
  CloseCode,
  ErrorCode,
  RANKD_VERSION,
  decodeBinaryFrame,
  decodeFrame,
  frameBytes,
  type ControllerMessage,
  type Hello,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { AgentLink, NodeRegistry } from '../nodes/node-registry.js';
import type { AgentHandlerTable, AuthenticatedAgent } from './agent-handlers.js';

/** A connection once its hello is accepted. */
type Authenticated = AgentConnection & AuthenticatedAgent;
/** Told the round trip of every answered ping: a registered node's link, in seconds. */
export type LinkRttObserver = (node: string, seconds: number) => void;

const HELLO_TIMEOUT_MS = 10_000;
/** A revoked node, or any node when the controller shuts down, gets this long to answer the close before its socket is cut. */
const CLOSE_ANSWER_MS = 500;

export class AgentConnection implements AgentLink {
  private node: string | null = null;
  private alive = true;
  /** When the unanswered ping went out (hrtime, ns); null when none is out. */
  private pingSentAt: bigint | null = null;
  private readonly helloTimer: NodeJS.Timeout;
  /** Set when its certificate was revoked: nothing it sends is heard any more. */
  private revoked = false;

  constructor(
    private readonly ws: WebSocket,
    readonly remoteAddress: string | null,
    /** The node name in the connection's client certificate: the only identity this link has. */
    readonly certName: string,
    private readonly registry: NodeRegistry,
    private readonly handlers: AgentHandlerTable,
    private readonly log: Logger,
    private readonly observeRtt: LinkRttObserver = () => {},
  ) {
    this.helloTimer = setTimeout(() => this.close(CloseCode.BadHello, 'no hello within 10 s'), HELLO_TIMEOUT_MS);
    ws.on('message', (data, isBinary) => this.onFrame(frameBytes(data), isBinary));
    ws.on('pong', () => this.onPong());
    ws.on('close', (code, reason) => this.onClose(code, reason.toString()));
    ws.on('error', (err) => this.log.warn({ err: err.message, node: this.name }, 'agent socket error'));
  }

  /** The node this connection speaks for, once its hello is accepted; null before. */
  get name(): string | null {
    return this.node;
  }

  /** Whether the hello was accepted: from then on every frame speaks for `name`. */
  authenticated(): this is Authenticated {
    return this.node !== null;
  }

  send(message: ControllerMessage): boolean {
    if (this.ws.readyState !== this.ws.OPEN) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  sendEncoded(frame: Buffer): boolean {
    if (this.ws.readyState !== this.ws.OPEN) return false;
    this.ws.send(frame, { binary: false });
    return true;
  }

  /** Bytes queued on the socket: senders of bulk data check it for backpressure. */
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  close(code: number, reason: string): void {
    this.ws.close(code, reason);
    if (code !== CloseCode.Revoked) return;
    // A revoked node is cut off now, not when it answers the close: no frame of it is
    // handled any more, the registry forgets the link (so no job, exec or shell uses it),
    // and a node that does not answer loses its socket shortly after.
    this.revoked = true;
    if (this.name) this.registry.disconnected(this.name, this, `${code} ${reason}`);
    setTimeout(() => this.ws.terminate(), CLOSE_ANSWER_MS).unref();
  }

  /**
   * The controller is shutting down: the link closes, and nothing it still sends or its close
   * is handled, because the store closes right after and a late frame would write to it.
   */
  shutDown(code: number, reason: string): void {
    clearTimeout(this.helloTimer);
    for (const event of ['message', 'pong', 'close'] as const) this.ws.removeAllListeners(event);
    this.ws.close(code, reason);
    // an agent that does not answer the close would hold the controller's exit for ws's 30 s
    setTimeout(() => this.ws.terminate(), CLOSE_ANSWER_MS).unref();
  }

  /** Called by the gateway's ping timer: a link that missed the last pong is dead. */
  checkAlive(): void {
    if (!this.alive) {
      this.log.warn({ node: this.name }, 'agent missed a pong; terminating link');
      this.ws.terminate();
      return;
    }
    this.alive = false;
    this.pingSentAt = process.hrtime.bigint();
    this.ws.ping();
  }

  private onPong(): void {
    this.alive = true;
    // ws answers pings inside the agent's event loop, so this is the delay a message to the
    // agent and back really sees: network, TLS and both event loops. Only pongs to our own
    // ping are timed; ws allows unsolicited ones.
    if (this.pingSentAt === null) return;
    const seconds = Number(process.hrtime.bigint() - this.pingSentAt) / 1e9;
    this.pingSentAt = null;
    if (this.name !== null) this.observeRtt(this.name, seconds);
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    if (this.revoked) return;
    if (!this.authenticated()) return this.onFirstFrame(data, isBinary);
    // binary frames carry bulk bytes after a validated header, and only after the hello
    if (isBinary) {
      const decoded = decodeBinaryFrame(data, AgentBinaryMessages);
      if (!decoded.ok) return this.refuseFrame(decoded);
      try {
        if (!this.handlers.dispatchBinary(this, decoded.message, decoded.payload)) this.unserved(decoded.type);
      } catch (err) {
        this.handlerFailed(decoded.type, err);
      }
      return;
    }
    const decoded = decodeFrame(data, AgentMessages);
    if (!decoded.ok) return this.refuseFrame(decoded);
    const message = decoded.message;
    if (message.type === 'hello') {
      this.send({
        type: 'error',
        code: ErrorCode.OutOfOrder,
        message: 'hello was already received on this connection',
        inReplyTo: 'hello',
      });
      return;
    }
    try {
      if (!this.handlers.dispatch(this, message)) this.unserved(message.type);
    } catch (err) {
      this.handlerFailed(message.type, err);
    }
  }

  /** Before the hello: the first frame must be a valid one, or the connection closes. */
  private onFirstFrame(data: Buffer, isBinary: boolean): void {
    const decoded = isBinary ? null : decodeFrame(data, AgentMessages);
    if (decoded === null || !decoded.ok) {
      const why = decoded === null ? 'a binary frame before the hello' : decoded.error;
      this.log.warn({ code: decoded?.code ?? ErrorCode.OutOfOrder, error: why }, 'refused agent frame');
      this.close(CloseCode.BadHello, truncate(`expected hello: ${why}`));
      return;
    }
    if (decoded.message.type !== 'hello') {
      this.close(CloseCode.BadHello, `expected hello, got "${decoded.message.type}"`);
      return;
    }
    this.onHello(decoded.message);
  }

  /** A frame that failed to decode: an error frame, and the connection stays up. */
  private refuseFrame(decoded: { code: string; error: string; type?: string; id?: string }): void {
    this.log.warn({ node: this.name, code: decoded.code, error: decoded.error }, 'refused agent frame');
    const inReplyTo = decoded.type ? { inReplyTo: decoded.type.slice(0, 128) } : {};
    this.send({
      type: 'error',
      ...(decoded.id ? { id: decoded.id } : {}),
      code: decoded.code,
      message: decoded.error,
      ...inReplyTo,
    });
  }

  /** Known to the schema map but not served by this controller: say so, stay up. */
  private unserved(type: string): void {
    this.send({ type: 'error', code: ErrorCode.UnknownType, message: `no handler for "${type}"`, inReplyTo: type });
  }

  /** A handler threw: the node is told, the connection stays up. */
  private handlerFailed(type: string, err: unknown): void {
    this.log.error({ err, node: this.name, type }, 'agent message handler failed');
    this.send({
      type: 'error',
      code: ErrorCode.Internal,
      message: `controller failed to handle "${type}"`,
      inReplyTo: type,
    });
  }

  private onHello(hello: Hello): void {
    clearTimeout(this.helloTimer);
    if (hello.name !== this.certName) {
      this.log.warn(
        { cert: this.certName, hello: hello.name, address: this.remoteAddress },
        'hello names another node than the certificate; refused',
      );
      this.close(
        CloseCode.IdentityMismatch,
        truncate(
          `${ErrorCode.NodeIdentityMismatch}: the certificate is for "${this.certName}", the hello says "${hello.name}"`,
        ),
      );
      return;
    }
    this.node = this.certName;
    const factsHash = hello.facts ? createHash('sha256').update(JSON.stringify(hello.facts)).digest('hex') : null;
    const { superseded } = this.registry.register(hello, this, factsHash);
    if (superseded) superseded.close(CloseCode.Superseded, 'another connection registered this node name');
    const { heartbeatMs, ttlMs } = this.registry.timing;
    this.send({ type: 'welcome', controllerVersion: RANKD_VERSION, heartbeatMs, ttlMs });
    this.log.info({ node: hello.name, address: this.remoteAddress, version: hello.version }, 'agent registered');
  }

  private onClose(code: number, reason: string): void {
    clearTimeout(this.helloTimer);
    if (this.name) this.registry.disconnected(this.name, this, `${code}${reason ? ' ' + reason : ''}`);
  }
}

function truncate(s: string): string {
  // close reasons are limited to 123 bytes by RFC 6455
  return Buffer.byteLength(s) <= 120 ? s : Buffer.from(s).subarray(0, 117).toString('utf8') + '...';
}
