// A controller's history (the events table of its rankd.db, opened read-only, as the queue
// tests and the scale-launch figure read it) and its job rows, for the restart figures:
// when an attempt's ranks started and ended, when a node was declared lost, when a job
// went back to the queue. Every time is the controller's Date.now() when it wrote the row.
import path from 'node:path';
import Database from 'better-sqlite3';

export interface StateEvent {
  id: number;
  at: number;
  to: string;
  reason: string;
}

export interface Span {
  first: number | null;
  last: number | null;
  count: number;
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed-out', 'lost']);

export class RestartHistory {
  private readonly db: Database.Database;
  private readonly states;
  private readonly kinds;
  private readonly span;
  private readonly rankRow;
  private readonly newest;

  constructor(dataDir: string) {
    this.db = new Database(path.join(dataDir, 'rankd.db'), { readonly: true, fileMustExist: true });
    this.states = this.db.prepare(
      'SELECT id, at, data FROM events WHERE subject = ? AND kind = ? AND id > ? ORDER BY id',
    );
    this.kinds = this.db.prepare('SELECT id, at, data FROM events WHERE subject = ? AND kind = ? ORDER BY id');
    // a rank's subject is ATTEMPT/RANK: the range [ATTEMPT/, ATTEMPT0) holds exactly those ('0' follows '/')
    this.span = this.db.prepare(
      'SELECT MIN(at) AS first, MAX(at) AS last, COUNT(*) AS count FROM events ' +
        'WHERE subject >= ? AND subject < ? AND kind = ?',
    );
    this.rankRow = this.db.prepare(
      'SELECT node, started_at AS startedAt, ended_at AS endedAt FROM ranks ' +
        'WHERE job_id = ? AND attempt = ? AND rank = ?',
    );
    this.newest = this.db.prepare('SELECT id FROM jobs ORDER BY created_at DESC, rowid DESC LIMIT 1');
  }

  /** A job's (or node's) state changes, `kind` job.state or node.state, after event `afterId`. */
  stateChanges(subject: string, kind: 'job.state' | 'node.state', afterId = 0): StateEvent[] {
    return (this.states.all(subject, kind, afterId) as Array<{ id: number; at: number; data: string }>).map((r) => {
      const d = JSON.parse(r.data) as { to: string; reason?: string };
      return { id: r.id, at: r.at, to: d.to, reason: d.reason ?? '' };
    });
  }

  jobStates(id: string): StateEvent[] {
    return this.stateChanges(id, 'job.state');
  }

  nodeStates(name: string, afterId: number): StateEvent[] {
    return this.stateChanges(name, 'node.state', afterId);
  }

  /** Events of one kind about one subject, oldest first, with their data. */
  events(subject: string, kind: string): Array<{ id: number; at: number; data: Record<string, unknown> }> {
    return (this.kinds.all(subject, kind) as Array<{ id: number; at: number; data: string }>).map((r) => ({
      id: r.id,
      at: r.at,
      data: JSON.parse(r.data) as Record<string, unknown>,
    }));
  }

  /** When the first and last rank of an attempt (by its agents' id for it) had `kind` recorded, and how many did. */
  rankSpan(attemptId: string, kind: 'rank.started' | 'rank.exited'): Span {
    return this.span.get(`${attemptId}/`, `${attemptId}0`, kind) as Span;
  }

  /** A rank's row: its node, and its start and end as its agent reported them. */
  rank(
    jobId: string,
    attempt: number,
    rank: number,
  ): { node: string; startedAt: number | null; endedAt: number | null } {
    const row = this.rankRow.get(jobId, attempt, rank) as
      { node: string; startedAt: number | null; endedAt: number | null } | undefined;
    if (!row) throw new Error(`job ${jobId} has no rank ${rank} in attempt ${attempt}`);
    return row;
  }

  /** The newest job's id, or null before any. */
  newestJob(): string | null {
    return (this.newest.get() as { id: string } | undefined)?.id ?? null;
  }

  /** The id of the newest event: what comes after it is new. */
  lastEventId(): number {
    return (this.db.prepare('SELECT MAX(id) AS id FROM events').get() as { id: number | null }).id ?? 0;
  }

  close(): void {
    this.db.close();
  }
}
