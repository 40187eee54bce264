// The audit log: who did what, from where, and the outcome. Kept in the store (rankd audit)
// and appended, one JSON object a line, to <data dir>/audit.jsonl for shipping elsewhere.
//
// A mutating request's entry is written before the request is carried out (`begin`); when
// that write fails the request fails too (Nomad's "enforced" sink), so nothing happens that
// the log does not hold. The entry is completed with the status and duration once the answer
// is sent (`finish`), and only then is its line appended to the file.
import { createHash, randomUUID } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditEntry } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { Db } from './database.js';

export type AuditStart = Omit<AuditEntry, 'id' | 'time' | 'status' | 'durationMs' | 'argv' | 'argvHash' | 'envNames'> & { argv?: string[] | null; envNames?: string[] | null };
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
  private fd: number | null;
  readonly file: string;

  constructor(
    private readonly db: Db,
    dataDir: string,
    private readonly log: Logger,
  ) {
    this.insert = db.prepare(`INSERT INTO audit (id, at, user_name, role, accessor, source, method, route, resource, argv, argv_hash, env_names, decision, reason, status, duration_ms)
      VALUES (@id, @at, @user, @role, @accessor, @source, @method, @route, @resource, @argv, @argvHash, @envNames, @decision, @reason, @status, @durationMs)`);
    this.update = db.prepare('UPDATE audit SET status = @status, duration_ms = @durationMs, resource = @resource, decision = @decision, reason = @reason WHERE id = @id');
    this.byId = db.prepare('SELECT * FROM audit WHERE id = ?');
    this.file = join(dataDir, 'audit.jsonl');
    this.fd = openSync(this.file, 'a', 0o600);
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
      this.update.run({ id, status: done.status, durationMs: done.durationMs, resource: JSON.stringify(resource), decision: done.decision, reason: done.reason });
      this.appendLine(done);
    } catch (err) {
      this.log.error({ err, audit: id }, 'cannot complete an audit entry');
    }
  }

  /** A whole entry at once (refusals); throws when it cannot be written. */
  record(start: AuditStart, outcome: { status: number; durationMs: number | null }): string {
    const id = randomUUID();
    const params = this.params(id, start, outcome.status, outcome.durationMs === null ? null : round(outcome.durationMs));
    this.insert.run(params);
    this.appendLine(toEntry({ ...params, seq: 0, user_name: params.user, argv_hash: params.argvHash, env_names: params.envNames, duration_ms: params.durationMs }));
    return id;
  }

  /** Entries at or after `since` (oldest first), or the newest `limit` ones. */
  list(since: number | null, limit: number): AuditEntry[] {
    const rows =
      since === null
        ? (this.db.prepare('SELECT * FROM (SELECT * FROM audit ORDER BY seq DESC LIMIT ?) ORDER BY seq').all(limit) as Row[])
        : (this.db.prepare('SELECT * FROM audit WHERE at >= ? ORDER BY seq LIMIT ?').all(since, limit) as Row[]);
    return rows.map(toEntry);
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private appendLine(entry: AuditEntry): void {
    if (this.fd === null) throw new Error('audit log closed');
    writeSync(this.fd, JSON.stringify(entry) + '\n');
  }

  private params(id: string, s: AuditStart, status: number | null, durationMs: number | null) {
    const argvJson = s.argv ? JSON.stringify(s.argv) : null;
    return {
      id,
      at: Date.now(),
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
  };
}
