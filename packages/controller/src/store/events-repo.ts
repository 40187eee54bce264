// Append-only event log: node state changes, and job and rank transitions, in one history.
import type { Db } from './database.js';

export interface EventRow {
  id: number;
  at: number;
  kind: string;
  subject: string;
  data: Record<string, unknown>;
}

/** One stored chunk of a rank's output: bytes [offset, offset + bytes) of a stream, stored at `at`. */
export interface OutputEvent {
  id: number;
  at: number;
  rank: number;
  stream: 'stdout' | 'stderr';
  offset: number;
  bytes: number;
}

export class EventsRepo {
  private readonly insert;
  private readonly since;
  private readonly rankOutputsStmt;
  private readonly jobOutputsStmt;
  private readonly lastStmt;
  private readonly lastOfStmt;

  constructor(db: Db) {
    this.insert = db.prepare('INSERT INTO events (at, kind, subject, data) VALUES (?, ?, ?, ?)');
    this.since = db.prepare('SELECT id, at, kind, subject, data FROM events WHERE id > ? ORDER BY id LIMIT ?');
    // one rank's chunks come from the subject index in id order, without a sort
    this.rankOutputsStmt = db.prepare(
      "SELECT id, at, subject, data FROM events WHERE subject = ? AND id > ? AND id <= ? AND kind = 'rank.output' ORDER BY id LIMIT ?",
    );
    // the newest events of a whole job: "+subject" keeps SQLite on the primary key from afterId
    // on (a job's rank subjects "<job>/<rank>" lie in ["<job>/", "<job>0"), '0' following '/')
    this.jobOutputsStmt = db.prepare(
      "SELECT id, at, subject, data FROM events WHERE id > ? AND +subject >= ? AND +subject < ? AND kind = 'rank.output' ORDER BY id LIMIT ?",
    );
    this.lastStmt = db.prepare('SELECT max(id) AS id FROM events');
    this.lastOfStmt = db.prepare('SELECT at FROM events WHERE subject = ? AND kind = ? ORDER BY id DESC LIMIT 1');
  }

  append(kind: string, subject: string, data: Record<string, unknown> = {}, at = Date.now()): void {
    this.insert.run(at, kind, subject, JSON.stringify(data));
  }

  /** The id of the newest event, 0 when there is none. */
  lastId(): number {
    return (this.lastStmt.get() as { id: number | null }).id ?? 0;
  }

  /** When the newest event of this kind about this subject happened (a node's last resume), or null. */
  lastAt(subject: string, kind: string): number | null {
    return (this.lastOfStmt.get(subject, kind) as { at: number } | undefined)?.at ?? null;
  }

  /** One rank's stored output chunks with ids in (afterId, upTo], oldest first. */
  rankOutputs(jobId: string, rank: number, afterId: number, upTo: number, limit: number): OutputEvent[] {
    return this.outputRows(jobId, this.rankOutputsStmt.all(`${jobId}/${rank}`, afterId, upTo, limit));
  }

  /** A job's output chunks stored after afterId, oldest first: cheap when they are recent. */
  jobOutputsAfter(jobId: string, afterId: number, limit: number): OutputEvent[] {
    return this.outputRows(jobId, this.jobOutputsStmt.all(afterId, `${jobId}/`, `${jobId}0`, limit));
  }

  private outputRows(jobId: string, rows: unknown[]): OutputEvent[] {
    return (rows as Array<{ id: number; at: number; subject: string; data: string }>).map((r) => {
      const d = JSON.parse(r.data) as { stream: 'stdout' | 'stderr'; offset: number; bytes: number };
      return {
        id: r.id,
        at: r.at,
        rank: Number(r.subject.slice(jobId.length + 1)),
        stream: d.stream,
        offset: d.offset,
        bytes: d.bytes,
      };
    });
  }

  list(afterId = 0, limit = 1000): EventRow[] {
    return (this.since.all(afterId, limit) as Array<Omit<EventRow, 'data'> & { data: string }>).map((r) => ({
      ...r,
      data: JSON.parse(r.data) as Record<string, unknown>,
    }));
  }
}
