// Append-only event log: node state changes now, job and rank transitions later.
import type { Db } from './database.js';

export interface EventRow {
  id: number;
  at: number;
  kind: string;
  subject: string;
  data: Record<string, unknown>;
}

export class EventsRepo {
  private readonly insert;
  private readonly since;

  constructor(db: Db) {
    this.insert = db.prepare('INSERT INTO events (at, kind, subject, data) VALUES (?, ?, ?, ?)');
    this.since = db.prepare('SELECT id, at, kind, subject, data FROM events WHERE id > ? ORDER BY id LIMIT ?');
  }

  append(kind: string, subject: string, data: Record<string, unknown> = {}, at = Date.now()): void {
    this.insert.run(at, kind, subject, JSON.stringify(data));
  }

  list(afterId = 0, limit = 1000): EventRow[] {
    return (this.since.all(afterId, limit) as Array<Omit<EventRow, 'data'> & { data: string }>).map((r) => ({ ...r, data: JSON.parse(r.data) as Record<string, unknown> }));
  }
}
