// Append-only event log: node state changes now, job and rank transitions later.
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
  private readonly outputs;

  constructor(db: Db) {
    this.insert = db.prepare('INSERT INTO events (at, kind, subject, data) VALUES (?, ?, ?, ?)');
    this.since = db.prepare('SELECT id, at, kind, subject, data FROM events WHERE id > ? ORDER BY id LIMIT ?');
    // a job's rank subjects are "<job>/<rank>": the range ["<job>/", "<job>0") holds them and
    // no other job's ('0' follows '/')
    this.outputs = db.prepare("SELECT id, at, subject, data FROM events WHERE subject >= ? AND subject < ? AND kind = 'rank.output' AND id > ? ORDER BY id LIMIT ?");
  }

  append(kind: string, subject: string, data: Record<string, unknown> = {}, at = Date.now()): void {
    this.insert.run(at, kind, subject, JSON.stringify(data));
  }

  /** A job's stored output chunks after `afterId`, in the order the controller stored them. */
  outputsOf(jobId: string, afterId: number, limit: number): OutputEvent[] {
    const rows = this.outputs.all(`${jobId}/`, `${jobId}0`, afterId, limit) as Array<{ id: number; at: number; subject: string; data: string }>;
    return rows.map((r) => {
      const d = JSON.parse(r.data) as { stream: 'stdout' | 'stderr'; offset: number; bytes: number };
      return { id: r.id, at: r.at, rank: Number(r.subject.slice(jobId.length + 1)), stream: d.stream, offset: d.offset, bytes: d.bytes };
    });
  }

  list(afterId = 0, limit = 1000): EventRow[] {
    return (this.since.all(afterId, limit) as Array<Omit<EventRow, 'data'> & { data: string }>).map((r) => ({ ...r, data: JSON.parse(r.data) as Record<string, unknown> }));
  }
}
