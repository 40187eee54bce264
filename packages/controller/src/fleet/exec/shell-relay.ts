// Interactive shells: a client WebSocket on /v1/shell relayed to a PTY on one node, the
// way `kubectl exec -it` relays through the API server.
//
// The client authenticates with its API token in the upgrade request, and its role must
// grant `shell` (the policy table's entry for GET /v1/shell); anything wrong (token, role,
// node, size) is a plain HTTP answer and no socket ever opens. Terminal bytes are
// binary frames both ways; resize and signals are JSON text frames. Output is acknowledged
// to the agent only once the client's socket took it, so a slow client slows the remote
// program down instead of filling the controller's memory. When either side goes away,
// the other is ended: a lost client hangs the terminal up, a lost agent closes the client.
// Revoking the token or removing the user that opened a shell ends it at once
// (streams/open-streams.ts): a last error event RANKD_CREDENTIAL_REVOKED, close code 4401 with
// that code as its reason, the program on the node hung up, and the audit entry says so.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { Compile } from 'typebox/compile';
import {
  CloseCode,
  ErrorCode,
  FleetErrorCode,
  MAX_FRAME_BYTES,
  SHELL_SUBPROTOCOL,
  ShellControl,
  type PtyExit,
  type PtyOpen,
  type PtyOpened,
  type PtyOutput,
  type ShellEvent,
  type WithoutId,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { AgentHandlers } from '../../gateway/agent-handlers.js';
import { ClientKeepalive } from '../../streams/client-keepalive.js';
import { streamOwner, type StreamEnd } from '../../streams/open-streams.js';
import type { UpgradeAccess, UpgradeVerdict } from '../../streams/upgrade-access.js';
import { refuse } from '../../streams/upgrade-refusal.js';
import type { AuditStart } from '../../store/audit-log.js';
import type { Principal } from '../../store/users-repo.js';
import type { AgentLink, NodeRegistry } from '../../nodes/node-registry.js';
import { AgentRequests } from './agent-requests.js';

interface Session {
  id: string;
  node: string;
  link: AgentLink;
  ws: WebSocket;
  ended: boolean;
  /** Its audit entry, completed when the session ends. */
  auditId: string;
  startedAt: number;
  /** Stops tracking it among the open streams. */
  forget: () => void;
}

/** Raw input bytes per pty.input frame: well under the frame cap once base64'd. */
const INPUT_CHUNK = 192 * 1024;
const LINK_CHECK_MS = 250;
const CLIENT_PING_MS = 30_000;
/** A revoked client gets this long to answer the close before its socket is cut. */
const REVOKED_CLOSE_MS = 500;
const checkControl = Compile(ShellControl);

export class ShellRelay {
  private readonly wss: WebSocketServer;
  private readonly sessions = new Map<string, Session>();
  private readonly linkTimer: NodeJS.Timeout;
  private readonly keepalive = new ClientKeepalive(CLIENT_PING_MS);

  constructor(
    private readonly registry: NodeRegistry,
    private readonly access: UpgradeAccess,
    private readonly log: Logger,
  ) {
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_FRAME_BYTES,
      perMessageDeflate: false,
      handleProtocols: (protocols) => (protocols.has(SHELL_SUBPROTOCOL) ? SHELL_SUBPROTOCOL : false),
    });
    this.linkTimer = setInterval(() => this.checkLinks(), LINK_CHECK_MS);
    this.linkTimer.unref();
  }

  /** Agent → controller frames of shell sessions. */
  handlers(): AgentHandlers {
    return {
      'pty.opened': (conn, m) => this.onOpened(conn.name, m),
      'pty.output': (conn, m) => this.onOutput(conn.name, m),
      'pty.exit': (conn, m) => this.onExit(conn.name, m),
    };
  }

  /** The upgrade route of /v1/shell. */
  readonly upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const startedAt = performance.now();
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    const argv = q.getAll('arg');
    const entry = (principal: Principal | null): AuditStart => ({
      user: principal?.user ?? null,
      role: principal?.role ?? null,
      accessor: principal?.accessor ?? null,
      source: req.socket.remoteAddress ?? '',
      method: 'GET',
      route: '/v1/shell',
      resource: {
        node: (q.get('node') ?? '').slice(0, 256),
        ...(q.get('user') ? { unixUser: q.get('user')!.slice(0, 64) } : {}),
      },
      argv: argv.length > 0 ? argv : null,
      // the one variable a shell's client sets for its program
      envNames: ['TERM'],
      decision: 'allow',
      reason: 'shell session',
    });
    void this.access.authorizeUpgrade(req, '/v1/shell').then(
      (auth) => this.afterAuth(req, socket, head, q, auth, entry, startedAt),
      (err: Error) => {
        this.log.error({ err }, 'shell upgrade failed');
        refuse(socket, 500, ErrorCode.Internal, 'internal error; see the controller log');
      },
    );
  };

  private afterAuth(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    q: URLSearchParams,
    auth: UpgradeVerdict,
    entry: (p: Principal | null) => AuditStart,
    startedAt: number,
  ): void {
    if ('refusal' in auth) {
      try {
        this.access.deps.audit.record(
          { ...entry(auth.principal), decision: 'deny', reason: auth.refusal.message },
          { status: auth.refusal.status, durationMs: performance.now() - startedAt },
        );
      } catch (err) {
        this.log.error({ err }, 'cannot record a refused shell in the audit log');
      }
      return refuse(socket, auth.refusal.status, auth.refusal.code, auth.refusal.message, auth.refusal.retryAfter);
    }
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
    if (!offered.includes(SHELL_SUBPROTOCOL))
      return refuse(socket, 400, ErrorCode.InvalidRequest, `subprotocol ${SHELL_SUBPROTOCOL} required`);
    const node = q.get('node') ?? '';
    const cols = Number(q.get('cols') ?? 80);
    const rows = Number(q.get('rows') ?? 24);
    if (!Number.isInteger(cols) || !Number.isInteger(rows) || cols < 1 || rows < 1 || cols > 10_000 || rows > 10_000) {
      return refuse(socket, 400, ErrorCode.InvalidRequest, `bad terminal size ${q.get('cols')}x${q.get('rows')}`);
    }
    const known = this.registry.get(node);
    if (!known) return refuse(socket, 404, ErrorCode.NodeNotFound, `unknown node "${node}"`);
    const link = this.registry.link(node);
    if (!link || known.state !== 'ready')
      return refuse(
        socket,
        503,
        FleetErrorCode.AgentUnreachable,
        `node ${node}: its agent is not connected (${known.state})`,
      );
    if (!known.capabilities.includes('pty'))
      return refuse(
        socket,
        409,
        FleetErrorCode.MissingCapability,
        `node ${node}: agent ${known.version ?? ''} has no "pty" capability; upgrade it`,
      );
    const open: WithoutId<PtyOpen> = {
      type: 'pty.open',
      cols,
      rows,
      term: /^[A-Za-z0-9._+-]{1,64}$/.test(q.get('term') ?? '') ? q.get('term')! : 'xterm-256color',
      ...(q.getAll('arg').length > 0 ? { argv: q.getAll('arg') } : {}),
      ...(q.get('user') ? { user: q.get('user')! } : {}),
      ...(q.get('cwd') ? { cwd: q.get('cwd')! } : {}),
    };
    // enforced: no shell opens unless its audit entry is written
    let auditId: string;
    try {
      auditId = this.access.deps.audit.begin(entry(auth.principal));
    } catch (err) {
      this.log.error({ err }, 'audit entry not written: shell refused');
      return refuse(
        socket,
        503,
        ErrorCode.AuditUnavailable,
        `the audit log cannot be written (${(err as Error).message}); no shell was opened`,
      );
    }
    const principal = auth.principal;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.start(ws, principal, node, link, open, auditId, startedAt));
  }

  close(): void {
    clearInterval(this.linkTimer);
    this.keepalive.stop();
    for (const s of this.sessions.values())
      this.end(s, { type: 'error', code: ErrorCode.Internal, message: 'the controller is shutting down' }, 1001);
    this.wss.close();
  }

  private start(
    ws: WebSocket,
    principal: Principal,
    node: string,
    link: AgentLink,
    open: WithoutId<PtyOpen>,
    auditId: string,
    startedAt: number,
  ): void {
    const session: Session = {
      id: AgentRequests.newId(),
      node,
      link,
      ws,
      ended: false,
      auditId,
      startedAt,
      forget: () => {},
    };
    this.sessions.set(session.id, session);
    session.forget = this.access.deps.streams.add(streamOwner(principal), (why) => this.revoked(session, why));
    this.keepalive.watch(ws);
    this.log.info({ node, session: session.id }, 'shell session opening');
    ws.on('message', (data, isBinary) => this.onClient(session, data as Buffer, isBinary));
    ws.on('close', () => this.onClientGone(session, 'the client closed the connection'));
    ws.on('error', (err) => this.log.warn({ err: err.message, node }, 'shell client socket error'));
    if (!link.send({ ...open, id: session.id }))
      this.end(
        session,
        { type: 'error', code: FleetErrorCode.AgentUnreachable, message: `node ${node}: its agent is not connected` },
        1011,
      );
  }

  private onClient(s: Session, data: Buffer, isBinary: boolean): void {
    if (s.ended) return;
    if (isBinary) {
      for (let at = 0; at < data.length; at += INPUT_CHUNK) {
        s.link.send({ type: 'pty.input', id: s.id, data: data.subarray(at, at + INPUT_CHUNK).toString('base64') });
      }
      return;
    }
    let control: unknown;
    try {
      control = JSON.parse(data.toString('utf8'));
    } catch {
      control = null;
    }
    if (!checkControl.Check(control)) {
      this.sendEvent(s, {
        type: 'error',
        code: ErrorCode.InvalidRequest,
        message: 'control frames are {"type":"resize","cols":C,"rows":R} or {"type":"signal","signal":"SIGINT"}',
      });
      return;
    }
    const c = control;
    if (c.type === 'resize') s.link.send({ type: 'pty.resize', id: s.id, cols: c.cols, rows: c.rows });
    else s.link.send({ type: 'pty.signal', id: s.id, signal: c.signal });
  }

  private onOpened(node: string, m: PtyOpened): void {
    const s = this.mine(node, m.id);
    if (s) this.sendEvent(s, { type: 'started', node, pid: m.pid });
  }

  private onOutput(node: string, m: PtyOutput): void {
    const s = this.mine(node, m.id);
    if (!s) return;
    const bytes = Buffer.from(m.data, 'base64');
    if (bytes.length === 0) return;
    s.ws.send(bytes, { binary: true }, (err) => {
      if (!err && !s.ended) s.link.send({ type: 'pty.ack', id: s.id, bytes: bytes.length });
    });
  }

  private onExit(node: string, m: PtyExit): void {
    const s = this.mine(node, m.id);
    if (!s) return;
    if (m.error) this.end(s, { type: 'error', code: m.error.code, message: m.error.message }, 1000, false);
    else this.end(s, { type: 'exit', code: m.code, signal: m.signal }, 1000, false);
  }

  private onClientGone(s: Session, why: string): void {
    if (s.ended) return;
    s.ended = true;
    this.sessions.delete(s.id);
    s.forget();
    // the remote program must not outlive its user's connection
    s.link.send({ type: 'pty.close', id: s.id, reason: why });
    this.finishAudit(s, why);
    this.log.info({ node: s.node, session: s.id, why }, 'shell session closed by the client');
  }

  /** Ends a session from this side; `hangUp` tells the agent to end the program too. */
  private end(s: Session, last: ShellEvent, code: number, hangUp = true): void {
    if (s.ended) return;
    s.ended = true;
    this.sessions.delete(s.id);
    s.forget();
    if (hangUp)
      s.link.send({ type: 'pty.close', id: s.id, reason: last.type === 'error' ? last.message : 'session ended' });
    this.sendEvent(s, last);
    s.ws.close(code, last.type === 'error' ? last.code : 'exit');
    this.finishAudit(
      s,
      last.type === 'error'
        ? `${last.code}: ${last.message}`
        : last.type === 'exit'
          ? `exit code ${last.code ?? '-'}${last.signal ? ` signal ${last.signal}` : ''}`
          : 'ended',
    );
    this.log.info({ node: s.node, session: s.id, last }, 'shell session ended');
  }

  /** Its token or user was revoked: hang the program up, tell the client why, and do not wait on it to close. */
  private revoked(s: Session, why: StreamEnd): void {
    this.end(s, { type: 'error', code: why.code, message: why.message }, CloseCode.Revoked);
    setTimeout(() => s.ws.terminate(), REVOKED_CLOSE_MS).unref();
  }

  private finishAudit(s: Session, reason: string): void {
    this.access.deps.audit.finish(s.auditId, {
      status: 101,
      durationMs: performance.now() - s.startedAt,
      resource: { session: s.id },
      reason: `shell session: ${reason}`,
    });
  }

  private mine(node: string, id: string): Session | undefined {
    const s = this.sessions.get(id);
    return s && s.node === node && !s.ended ? s : undefined;
  }

  private sendEvent(s: Session, event: ShellEvent): void {
    if (s.ws.readyState === s.ws.OPEN) s.ws.send(JSON.stringify(event));
  }

  private checkLinks(): void {
    for (const s of this.sessions.values()) {
      if (this.registry.link(s.node) !== s.link) {
        this.end(
          s,
          {
            type: 'error',
            code: FleetErrorCode.AgentUnreachable,
            message: `node ${s.node}: the connection to its agent was lost; the remote program is ended`,
          },
          1011,
          false,
        );
      }
    }
  }
}
