// A job's stdin: the submitter's bytes, from a client WebSocket on /v1/stdin?job=ID to the
// agent of each rank that reads them (the job's `stdin`: one rank, or all), as srun --input.
//
// Who: the job's owner, whatever its role, or an admin (the policy table's `jobs.stdin`,
// `own` for every role but admin), and one writer per job; the upgrade is refused as plain
// HTTP otherwise, and a connection opens only once its audit entry is written.
//
// Memory is bounded at every hop. The client may have STDIN_WINDOW_BYTES unacknowledged:
// the bytes wait here in one queue that every reading rank reads at its own offset, and are
// acknowledged to the client (and dropped) once they have been sent to every such rank; a
// client that sends past its window is cut off. Towards each agent at most AGENT_WINDOW
// bytes are unacknowledged, and the agent acknowledges only what is in the rank's pipe. So
// a rank that reads slowly (or a job still queued) holds the producer back end to end.
//
// The stdin ends (each reading rank gets EOF after the last byte) when the client closes
// its socket: its own EOF, a detach, or its death. A job whose stdin no client opened gets
// EOF 10 s after its first reading rank started. A rank whose stdin closes (it ended, or
// closed fd 0), whose agent's link changes, or whose job ends takes nothing more; once no
// rank takes more, the client is told (`closed`) and stops reading.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  CloseCode,
  ErrorCode,
  STDIN_MAX_FRAME_BYTES,
  STDIN_SUBPROTOCOL,
  STDIN_WINDOW_BYTES,
  type RankStdinAck,
  type RankStdinClosed,
  type StdinEvent,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { AgentHandlers } from '../gateway/agent-handlers.js';
import { ClientKeepalive } from '../streams/client-keepalive.js';
import { refuse } from '../streams/upgrade-refusal.js';
import { streamOwner, type StreamEnd } from '../streams/open-streams.js';
import type { UpgradeAccess } from '../streams/upgrade-access.js';
import type { AuditStart } from '../store/audit-log.js';
import type { Principal } from '../store/users-repo.js';
import type { AgentLink, NodeRegistry } from '../nodes/node-registry.js';
import { ByteQueue } from './byte-queue.js';
import type { JobManager } from './job-manager.js';
import { readsStdin } from './rank-launches.js';
import { isTerminal } from './rank-status.js';

/** Bytes sent to one rank's agent and not yet in its pipe. */
const AGENT_WINDOW = 1024 * 1024;
/** Raw bytes per rank.stdin frame: 256 KiB once base64'd, under the frame cap. */
const CHUNK = 192 * 1024;
/** The client is given back window in steps of this much, or when the queue empties. */
const ACK_STEP = 64 * 1024;
/** A job whose stdin no client opens gets EOF this long after its first reading rank started. */
export const STDIN_CONNECT_MS = 10_000;
const LINK_CHECK_MS = 250;
const CLIENT_PING_MS = 30_000;
const REVOKED_CLOSE_MS = 500;
const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/;

interface Target {
  rank: number;
  node: string | null;
  /** The link the rank's start was heard on; set once it runs. */
  link: AgentLink | null;
  /** Offsets in the session's queue: sent to the agent, and in the rank's pipe. */
  sent: number;
  acked: number;
  /** Takes nothing more. */
  closed: boolean;
  endSent: boolean;
}

interface Session {
  jobId: string;
  /** The ranks that read the stdin; null while the job is queued (it has no rank map yet). */
  targets: Target[] | null;
  queue: ByteQueue;
  ws: WebSocket | null;
  /** A client connected once: a job has one writer. */
  claimed: boolean;
  /** No more bytes will come. */
  eof: boolean;
  /** Bytes acknowledged to the client. */
  ackedToClient: number;
  /** Set once the client has been told the last event (closed or error). */
  done: boolean;
  connectTimer: NodeJS.Timeout | null;
  audit: { id: string; startedAt: number } | null;
  forget: () => void;
}

export class StdinRelay {
  private readonly wss: WebSocketServer;
  private readonly sessions = new Map<string, Session>();
  private readonly linkTimer: NodeJS.Timeout;
  private readonly keepalive = new ClientKeepalive(CLIENT_PING_MS);

  constructor(
    private readonly jobs: JobManager,
    private readonly registry: NodeRegistry,
    private readonly access: UpgradeAccess,
    private readonly log: Logger,
  ) {
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: STDIN_MAX_FRAME_BYTES,
      perMessageDeflate: false,
      handleProtocols: (protocols) => (protocols.has(STDIN_SUBPROTOCOL) ? STDIN_SUBPROTOCOL : false),
    });
    jobs.on('changed', (id) => this.onJobChanged(id));
    jobs.on('ended', (id) => this.onJobEnded(id));
    this.linkTimer = setInterval(() => this.checkLinks(), LINK_CHECK_MS);
    this.linkTimer.unref();
  }

  /** Agent → controller frames about ranks' stdin. */
  handlers(): AgentHandlers {
    return {
      'rank.stdin.ack': (conn, m) => this.onAck(conn.name, m),
      'rank.stdin.closed': (conn, m) => this.onRankClosed(conn.name, m),
    };
  }

  close(): void {
    clearInterval(this.linkTimer);
    this.keepalive.stop();
    for (const s of this.sessions.values())
      this.finish(s, { type: 'error', code: ErrorCode.Internal, message: 'the controller is shutting down' }, 1001);
    this.wss.close();
  }

  /** The upgrade route of /v1/stdin. */
  readonly upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const startedAt = performance.now();
    const jobId = new URL(req.url ?? '/', 'http://x').searchParams.get('job') ?? '';
    const entry = (principal: Principal | null, decision: 'allow' | 'deny', reason: string): AuditStart => ({
      user: principal?.user ?? null,
      role: principal?.role ?? null,
      accessor: principal?.accessor ?? null,
      source: req.socket.remoteAddress ?? '',
      method: 'GET',
      route: '/v1/stdin',
      resource: { job: jobId.slice(0, 64) },
      decision,
      reason,
    });
    void this.access.authorizeUpgrade(req, '/v1/stdin').then(
      (auth) => {
        if ('refusal' in auth) {
          this.recordRefusal(entry(auth.principal, 'deny', auth.refusal.message), auth.refusal.status, startedAt);
          return refuse(socket, auth.refusal.status, auth.refusal.code, auth.refusal.message, auth.refusal.retryAfter);
        }
        const why = this.check(req, auth.principal, jobId);
        if (why) {
          if (why.status === 403) this.recordRefusal(entry(auth.principal, 'deny', why.message), 403, startedAt);
          return refuse(socket, why.status, why.code, why.message);
        }
        const s = this.session(jobId)!;
        // enforced: nothing is written to a job's stdin unless its audit entry is
        let auditId: string;
        try {
          auditId = this.access.deps.audit.begin(entry(auth.principal, 'allow', `stdin of job ${jobId}`));
        } catch (err) {
          this.log.error({ err }, 'audit entry not written: stdin refused');
          return refuse(
            socket,
            503,
            ErrorCode.AuditUnavailable,
            `the audit log cannot be written (${(err as Error).message}); stdin was not opened`,
          );
        }
        s.claimed = true;
        s.audit = { id: auditId, startedAt };
        // a client that leaves during the handshake never attaches: its stdin ends all the same
        socket.once('close', () => {
          if (s.ws === null) this.endInput(s, 'the client left before its stdin opened');
        });
        this.wss.handleUpgrade(req, socket, head, (ws) => this.attach(s, ws, auth.principal));
      },
      (err: Error) => {
        this.log.error({ err }, 'stdin upgrade failed');
        refuse(socket, 500, ErrorCode.Internal, 'internal error; see the controller log');
      },
    );
  };

  /** Why this caller may not write to this job's stdin, or null. */
  private check(
    req: IncomingMessage,
    principal: Principal,
    jobId: string,
  ): { status: number; code: string; message: string } | null {
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    if (!offered.includes(STDIN_SUBPROTOCOL))
      return { status: 400, code: ErrorCode.InvalidRequest, message: `subprotocol ${STDIN_SUBPROTOCOL} required` };
    if (!JOB_ID.test(jobId))
      return {
        status: 400,
        code: ErrorCode.InvalidRequest,
        message: `job=${JSON.stringify(jobId.slice(0, 80))} is not a job id`,
      };
    const owner = this.jobs.owner(jobId);
    if (owner === undefined) return { status: 404, code: ErrorCode.NotFound, message: `no job ${jobId}` };
    // the grant is `all` for admins only: anyone else writes to its own jobs' stdin alone
    if (this.access.scopeOf(principal, 'jobs.stdin') !== 'all' && owner !== principal.user) {
      return {
        status: 403,
        code: ErrorCode.Forbidden,
        message: `user "${principal.user}" (role ${principal.role}) may not write to the stdin of job ${jobId}: it belongs to ${owner === null ? 'no user' : `"${owner}"`}, and only its owner or an admin may`,
      };
    }
    const job = this.jobs.current(jobId);
    if (!job)
      return { status: 409, code: ErrorCode.StdinUnavailable, message: `job ${jobId} has ended: its stdin is closed` };
    if (job.submit.stdin === undefined)
      return {
        status: 409,
        code: ErrorCode.StdinUnavailable,
        message: `job ${jobId} reads no stdin (it was submitted with --input none, or from a /dev/null stdin)`,
      };
    const s = this.session(jobId)!;
    if (s.claimed || s.eof)
      return {
        status: 409,
        code: ErrorCode.StdinUnavailable,
        message: `the stdin of job ${jobId} ${s.eof ? 'has ended' : 'already has its writer'}: a job has one`,
      };
    return null;
  }

  private recordRefusal(start: AuditStart, status: number, startedAt: number): void {
    try {
      this.access.deps.audit.record(start, { status, durationMs: performance.now() - startedAt });
    } catch (err) {
      this.log.error({ err }, 'cannot record a refused stdin in the audit log');
    }
  }

  /** The session of a live or queued job that reads stdin, made on first need. */
  private session(jobId: string): Session | undefined {
    const existing = this.sessions.get(jobId);
    if (existing) return existing;
    const job = this.jobs.current(jobId);
    if (!job || job.submit.stdin === undefined) return undefined;
    const s: Session = {
      jobId,
      targets: null,
      queue: new ByteQueue(),
      ws: null,
      claimed: false,
      eof: false,
      ackedToClient: 0,
      done: false,
      connectTimer: null,
      audit: null,
      forget: () => {},
    };
    this.sessions.set(jobId, s);
    return s;
  }

  private attach(s: Session, ws: WebSocket, principal: Principal): void {
    s.ws = ws;
    if (s.connectTimer) clearTimeout(s.connectTimer);
    s.connectTimer = null;
    s.forget = this.access.deps.streams.add(streamOwner(principal), (why) => this.revoked(s, why));
    this.keepalive.watch(ws);
    ws.on('message', (data, isBinary) => this.onClientData(s, data as Buffer, isBinary));
    ws.on('close', () => this.onClientGone(s));
    ws.on('error', (err) => this.log.warn({ err: err.message, job: s.jobId }, 'stdin client socket error'));
    this.log.info({ job: s.jobId }, 'stdin opened');
    // the job may be further on than when the session was made
    this.sync(s);
  }

  private onClientData(s: Session, data: Buffer, isBinary: boolean): void {
    if (s.eof || s.done) return;
    if (!isBinary) {
      this.finish(
        s,
        {
          type: 'error',
          code: ErrorCode.InvalidRequest,
          message: 'the stdin socket takes binary frames (the bytes) only; close it to end the stdin',
        },
        1003,
      );
      return;
    }
    s.queue.push(data);
    if (s.queue.end - s.ackedToClient > STDIN_WINDOW_BYTES + STDIN_MAX_FRAME_BYTES) {
      this.finish(
        s,
        {
          type: 'error',
          code: ErrorCode.TooLarge,
          message: `the client sent past its window of ${STDIN_WINDOW_BYTES} unacknowledged bytes`,
        },
        1008,
      );
      return;
    }
    this.pump(s);
  }

  /** The client's socket closed: its EOF, a detach, or its end. Each reading rank gets EOF after what came. */
  private onClientGone(s: Session): void {
    if (s.ws === null) return;
    s.ws = null;
    s.forget();
    this.endInput(s, 'the client closed its stdin');
  }

  private endInput(s: Session, why: string): void {
    if (s.eof) return;
    s.eof = true;
    this.log.info({ job: s.jobId, bytes: s.queue.end, why }, 'stdin ended');
    this.finishAudit(s, `${why}; ${s.queue.end} bytes`);
    this.pump(s);
  }

  /** Sends what each reading rank may take, the ends that are due, and gives the client back its window. */
  private pump(s: Session): void {
    // a queued job: its bytes wait here, within the client's window
    if (!s.targets) return;
    for (const t of s.targets) {
      if (t.closed || !t.link) continue;
      while (t.sent < s.queue.end && t.sent - t.acked < AGENT_WINDOW) {
        const bytes = s.queue.read(t.sent, Math.min(CHUNK, AGENT_WINDOW - (t.sent - t.acked)));
        t.link.send({ type: 'rank.stdin', jobId: s.jobId, rank: t.rank, data: bytes.toString('base64') });
        t.sent += bytes.length;
      }
      if (s.eof && t.sent === s.queue.end && !t.endSent) {
        t.endSent = true;
        t.link.send({ type: 'rank.stdin.end', jobId: s.jobId, rank: t.rank });
      }
    }
    const open = s.targets.filter((t) => !t.closed);
    const low = open.length === 0 ? s.queue.end : Math.min(...open.map((t) => t.sent));
    s.queue.dropBefore(low);
    const back = low - s.ackedToClient;
    if (back > 0 && (back >= ACK_STEP || low === s.queue.end) && s.ws) {
      s.ackedToClient = low;
      this.sendEvent(s, { type: 'ack', bytes: back });
    }
    if (open.length === 0) this.finish(s, { type: 'closed', reason: this.closedReason(s) }, 1000);
  }

  private closedReason(s: Session): string {
    return s.targets?.length === 1 ? `rank ${s.targets[0]!.rank} takes no more stdin` : 'no rank takes more stdin';
  }

  private onJobChanged(id: string): void {
    const job = this.jobs.current(id);
    if (!job || job.submit.stdin === undefined) return;
    const s = this.session(id);
    if (s) this.sync(s);
  }

  /** Ranks that started since: their links; ranks that ended: closed. */
  private sync(s: Session): void {
    const live = this.jobs.live.get(s.jobId);
    if (!live) return;
    s.targets ??= live.ranks
      .filter((r) => readsStdin(live.job.submit.stdin, r.rank))
      .map((r) => ({ rank: r.rank, node: null, link: null, sent: 0, acked: 0, closed: false, endSent: false }));
    for (const t of s.targets) {
      if (t.closed || t.link) continue;
      const r = live.ranks[t.rank];
      if (!r || isTerminal(r)) {
        this.closeTarget(s, t, `rank ${t.rank} ended`);
        continue;
      }
      if (r.state !== 'running') continue;
      t.node = r.node;
      t.link = this.registry.link(r.node);
      if (!t.link) {
        this.closeTarget(s, t, `the agent of node ${r.node} is not connected`);
        continue;
      }
      if (!s.claimed && !s.connectTimer && !s.eof) {
        s.connectTimer = setTimeout(() => {
          s.connectTimer = null;
          if (!s.claimed)
            this.endInput(s, `no client opened the stdin within ${STDIN_CONNECT_MS / 1000} s of the job's start`);
        }, STDIN_CONNECT_MS);
        s.connectTimer.unref();
      }
    }
    this.pump(s);
  }

  private onAck(node: string, m: RankStdinAck): void {
    const found = this.targetOf(node, m.jobId, m.rank);
    if (!found) return;
    const { s, t } = found;
    t.acked = Math.min(t.sent, t.acked + m.bytes);
    this.pump(s);
  }

  private onRankClosed(node: string, m: RankStdinClosed): void {
    const found = this.targetOf(node, m.jobId, m.rank);
    if (!found) return;
    this.closeTarget(found.s, found.t, m.reason);
    this.pump(found.s);
  }

  private closeTarget(s: Session, t: Target, why: string): void {
    if (t.closed) return;
    t.closed = true;
    this.log.info({ job: s.jobId, rank: t.rank, why }, 'a rank takes no more stdin');
  }

  /** A live target of a session whose rank runs on `node`; anything else is dropped. */
  private targetOf(node: string, jobId: string, rank: number): { s: Session; t: Target } | null {
    const s = this.sessions.get(jobId);
    const t = s?.targets?.find((x) => x.rank === rank);
    return s && t && !t.closed && t.node === node && t.link === this.registry.link(node) ? { s, t } : null;
  }

  private onJobEnded(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    for (const t of s.targets ?? []) this.closeTarget(s, t, 'the job ended');
    this.finish(s, { type: 'closed', reason: 'the job ended' }, 1000);
    if (s.connectTimer) clearTimeout(s.connectTimer);
    this.finishAudit(s, `the job ended; ${s.queue.end} bytes`);
    this.sessions.delete(id);
  }

  /** Tells the client the last event and closes its socket; the session stays until its job ends (one writer per job). */
  private finish(s: Session, last: Exclude<StdinEvent, { type: 'ack' }>, code: number): void {
    if (s.done) return;
    s.done = true;
    if (s.ws) {
      const ws = s.ws;
      this.sendEvent(s, last);
      ws.close(code, last.type === 'error' ? last.code : 'closed');
    }
    // nothing more comes in: every rank still reading gets EOF after what came
    this.endInput(s, last.type === 'error' ? `${last.code}: ${last.message}` : last.reason);
  }

  private revoked(s: Session, why: StreamEnd): void {
    const ws = s.ws;
    this.finish(s, { type: 'error', code: why.code, message: why.message }, CloseCode.Revoked);
    if (ws) setTimeout(() => ws.terminate(), REVOKED_CLOSE_MS).unref();
  }

  private finishAudit(s: Session, reason: string): void {
    if (!s.audit) return;
    const { id, startedAt } = s.audit;
    s.audit = null;
    this.access.deps.audit.finish(id, {
      status: 101,
      durationMs: performance.now() - startedAt,
      reason: `stdin: ${reason}`,
    });
  }

  private sendEvent(s: Session, event: StdinEvent): void {
    if (s.ws && s.ws.readyState === s.ws.OPEN) s.ws.send(JSON.stringify(event));
  }

  private checkLinks(): void {
    for (const s of this.sessions.values()) {
      let changed = false;
      for (const t of s.targets ?? []) {
        if (t.closed || !t.link || this.registry.link(t.node!) === t.link) continue;
        // what was in flight cannot be resumed: the agent ended the rank's stdin when its link dropped
        this.closeTarget(s, t, `the link to the agent of node ${t.node} changed`);
        changed = true;
      }
      if (changed) this.pump(s);
    }
  }
}
