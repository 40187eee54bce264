// The audit log: who did what, from where, and the outcome. Kept in the store (rankd audit)
// and appended, one JSON object a line, to <data dir>/audit.jsonl for shipping elsewhere.
//
// A mutating request's entry is written before the request is carried out (`begin`); when
// that write fails the request fails too (Nomad's "enforced" sink), so nothing happens that
// the log does not hold. The entry is completed with the status and duration once the answer
// is sent (`finish`), and only then is its line appended to the file.
//
// Refusals that anyone can cause at will (401, 429, 413, too deep, too many connections,
// refused agent upgrades, plain HTTP on the TLS port) and a node's refused messages are
// counted per source and minute (audit-refusals.ts). Entries older than the retention are
// deleted from the store every hour; the file is rotated by size (audit-file.ts).
import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { ErrorCode, type AuditEntry } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { Db } from './database.js';
import { AuditFile, DEFAULT_AUDIT_FILE_LIMITS, type AuditFileLimits } from './audit-file.js';
import { RefusalTally, type RefusalEvent } from './audit-refusals.js';

export type AuditStart = Omit<
  AuditEntry,
  'id' | 'time' | 'status' | 'durationMs' | 'argv' | 'argvHash' | 'envNames' | 'count'
> & { argv?: string[] | null; envNames?: string[] | null };

export interface AuditOptions {
  /** Entries older than this are deleted from the store (default 90 days). */
  retentionMs?: number;
  /** When audit.jsonl is rotated, and how many rotated files are kept. */
  file?: AuditFileLimits;
}

export const DEFAULT_AUDIT_RETENTION_MS = 90 * 86_400_000;
/** How often refusal counts reach the store, and how often expired entries are deleted. */
const TALLY_FLUSH_MS = 5_000;
const RETENTION_EVERY_MS = 3_600_000;

/** Statuses that need no credential to cause: counted per source and minute, not written one by one. */
const COUNTED_STATUSES = new Set([401, 413, 429]);
const COUNTED_CODES = new Set<string>([ErrorCode.JsonTooDeep, ErrorCode.TooManyConnections]);
/** The code of a counted refusal whose caller did not say (the shell's upgrade answers). */
const CODE_OF_STATUS: Record<number, string> = {
  401: ErrorCode.Unauthorized,
  413: ErrorCode.TooLarge,
  429: ErrorCode.RateLimited,
};

export interface AuditOutcome {
  status: number;
  durationMs: number;
  resource?: Record<string, string> | null;
  decision?: AuditEntry['decision'];
  reason?: string;
}

/** argv longer than this (as JSON) is recorded by its hash alone. */
const MAX_ARGV_CHARS = 4096;

type Row = Record<string, unknown>;

export class AuditLog {
  private readonly insert;
  private readonly update;
  private readonly byId;
  private readonly updateCount;
  private readonly expire;
  private readonly out: AuditFile;
  private readonly refusals: RefusalTally;
  private readonly timers: NodeJS.Timeout[];
  private readonly retentionMs: number;
  readonly file: string;

  constructor(
    private readonly db: Db,
    dataDir: string,
    private readonly log: Logger,
    options: AuditOptions = {},
    private readonly now: () => number = Date.now,
  ) {
    this.insert =
      db.prepare(`INSERT INTO audit (id, at, user_name, role, accessor, source, method, route, resource, argv, argv_hash, env_names, decision, reason, status, duration_ms)
      VALUES (@id, @at, @user, @role, @accessor, @source, @method, @route, @resource, @argv, @argvHash, @envNames, @decision, @reason, @status, @durationMs)`);
    this.update = db.prepare(
      'UPDATE audit SET status = @status, duration_ms = @durationMs, resource = @resource, decision = @decision, reason = @reason WHERE id = @id',
    );
    this.byId = db.prepare('SELECT * FROM audit WHERE id = ?');
    this.updateCount = db.prepare(
      'UPDATE audit SET count = @count, method = @method, route = @route, resource = @resource WHERE id = @id',
    );
    this.expire = db.prepare('DELETE FROM audit WHERE at < ?');
    this.file = join(dataDir, 'audit.jsonl');
    this.out = new AuditFile(this.file, options.file ?? DEFAULT_AUDIT_FILE_LIMITS);
    this.retentionMs = options.retentionMs ?? DEFAULT_AUDIT_RETENTION_MS;
    this.refusals = new RefusalTally(
      {
        open: (event, at) => this.openTally(event, at),
        update: (id, { count, method, route, routes, resource }) =>
          this.updateCount.run({
            id,
            count,
            method,
            route,
            resource: JSON.stringify(routes.length > 1 ? { ...resource, routes: routes.join(' ') } : resource),
          }),
        close: (id) => this.appendRow(id),
      },
      now,
    );
    this.expireOld();
    this.timers = [
      setInterval(() => this.flushRefusals(), TALLY_FLUSH_MS),
      setInterval(() => this.expireOld(), RETENTION_EVERY_MS),
    ];
    for (const t of this.timers) t.unref();
  }

  /** Writes the entry of a request about to be carried out; throws when it cannot (the caller must then refuse). */
  begin(start: AuditStart): string {
    const id = randomUUID();
    this.insert.run(this.params(id, start, null, null));
    return id;
  }

  /** Completes an entry begun earlier; failures are logged (the request has happened already). */
  finish(id: string, outcome: AuditOutcome): void {
    try {
      const row = this.byId.get(id) as Row | undefined;
      if (!row) return;
      const entry = toEntry(row);
      const resource = { ...entry.resource, ...(outcome.resource ?? {}) };
      const done: AuditEntry = {
        ...entry,
        resource,
        status: outcome.status,
        durationMs: round(outcome.durationMs),
        decision: outcome.decision ?? entry.decision,
        reason: outcome.reason ?? entry.reason,
      };
      this.update.run({
        id,
        status: done.status,
        durationMs: done.durationMs,
        resource: JSON.stringify(resource),
        decision: done.decision,
        reason: done.reason,
      });
      this.appendLine(done);
    } catch (err) {
      this.log.error({ err, audit: id }, 'cannot complete an audit entry');
    }
  }

  /**
   * A whole entry at once (refusals); throws when it cannot be written. A refusal that needs
   * no credential to cause (401, 413, 429, `code` too deep) is counted instead: its id is null.
   */
  record(start: AuditStart, outcome: { status: number; durationMs: number | null; code?: string }): string | null {
    if (start.decision === 'deny' && (COUNTED_STATUSES.has(outcome.status) || COUNTED_CODES.has(outcome.code ?? ''))) {
      const code = outcome.code ?? CODE_OF_STATUS[outcome.status] ?? `HTTP ${outcome.status}`;
      this.countRefusal({
        source: start.source,
        user: start.user,
        method: start.method,
        route: start.route,
        status: outcome.status,
        code,
        reason: start.reason,
      });
      return null;
    }
    const id = randomUUID();
    const params = this.params(
      id,
      start,
      outcome.status,
      outcome.durationMs === null ? null : round(outcome.durationMs),
    );
    this.insert.run(params);
    this.appendLine(
      toEntry({
        ...params,
        seq: 0,
        user_name: params.user,
        argv_hash: params.argvHash,
        env_names: params.envNames,
        duration_ms: params.durationMs,
        count: 1,
      }),
    );
    return id;
  }

  /** One more refusal from a source: its minute's entry counts it (audit-refusals.ts). */
  countRefusal(event: RefusalEvent): void {
    try {
      this.refusals.count(event);
    } catch (err) {
      this.log.error({ err, source: event.source, code: event.code }, 'cannot count a refusal in the audit log');
    }
  }

  /** Deletes entries older than the retention; returns how many went. */
  expireOld(): number {
    try {
      return this.expire.run(this.now() - this.retentionMs).changes;
    } catch (err) {
      this.log.error({ err }, 'cannot delete expired audit entries');
      return 0;
    }
  }

  /** Brings the refusal counts in the store up to date and writes the lines of minutes that are over. */
  flushRefusals(all = false): void {
    try {
      this.refusals.flush(all);
    } catch (err) {
      this.log.error({ err }, 'cannot write refusal counts to the audit log');
    }
  }

  /** Entries at or after `since` (oldest first), or the newest `limit` ones. */
  list(since: number | null, limit: number): AuditEntry[] {
    // a reader sees every refusal counted so far, not the count of the last flush
    this.flushRefusals();
    const rows =
      since === null
        ? (this.db
            .prepare('SELECT * FROM (SELECT * FROM audit ORDER BY seq DESC LIMIT ?) ORDER BY seq')
            .all(limit) as Row[])
        : (this.db.prepare('SELECT * FROM audit WHERE at >= ? ORDER BY seq LIMIT ?').all(since, limit) as Row[]);
    return rows.map(toEntry);
  }

  close(): void {
    for (const t of this.timers) clearInterval(t);
    this.flushRefusals(true);
    this.out.close();
  }

  private appendLine(entry: AuditEntry): void {
    this.out.append(JSON.stringify(entry));
  }

  private openTally(e: RefusalEvent, at: number): string {
    const id = randomUUID();
    const start: AuditStart = {
      user: e.user,
      role: e.role ?? null,
      accessor: null,
      source: e.source,
      method: e.method,
      route: e.route,
      resource: e.resource ?? {},
      argv: null,
      decision: 'deny',
      reason: `${e.code}: ${e.reason}`,
    };
    this.insert.run({ ...this.params(id, start, e.status, null), at });
    return id;
  }

  private appendRow(id: string): void {
    const row = this.byId.get(id) as Row | undefined;
    if (row) this.appendLine(toEntry(row));
  }

  private params(id: string, s: AuditStart, status: number | null, durationMs: number | null) {
    const argvJson = s.argv ? JSON.stringify(s.argv) : null;
    return {
      id,
      at: this.now(),
      user: s.user,
      role: s.role,
      accessor: s.accessor,
      source: s.source,
      method: s.method,
      route: s.route,
      resource: JSON.stringify(s.resource),
      argv: argvJson !== null && argvJson.length <= MAX_ARGV_CHARS ? argvJson : null,
      argvHash: argvJson === null ? null : 'sha256:' + createHash('sha256').update(argvJson).digest('hex'),
      envNames: s.envNames && s.envNames.length > 0 ? JSON.stringify([...s.envNames].sort()) : null,
      decision: s.decision,
      reason: s.reason,
      status,
      durationMs,
    };
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;

function toEntry(r: Row): AuditEntry {
  return {
    id: r['id'] as string,
    time: new Date(r['at'] as number).toISOString(),
    user: (r['user_name'] as string | null) ?? null,
    role: (r['role'] as string | null) ?? null,
    accessor: (r['accessor'] as string | null) ?? null,
    source: r['source'] as string,
    method: r['method'] as string,
    route: r['route'] as string,
    resource: JSON.parse(r['resource'] as string) as Record<string, string>,
    argv: r['argv'] ? (JSON.parse(r['argv'] as string) as string[]) : null,
    argvHash: (r['argv_hash'] as string | null) ?? null,
    envNames: r['env_names'] ? (JSON.parse(r['env_names'] as string) as string[]) : null,
    decision: r['decision'] as AuditEntry['decision'],
    reason: r['reason'] as string,
    status: (r['status'] as number | null) ?? null,
    durationMs: (r['duration_ms'] as number | null) ?? null,
    count: (r['count'] as number | undefined) ?? 1,
  };
}
