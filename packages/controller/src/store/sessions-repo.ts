// Dashboard sessions in the store, by the SHA-256 of their id (api/dashboard/sessions.ts).
import type { Db } from './database.js';

export interface SessionRow {
  accessor: string;
  expiresAt: number;
}

export class SessionsRepo {
  private readonly insert;
  private readonly byKey;
  private readonly remove;
  private readonly expire;
  private readonly count;
  private readonly evictOldest;

  constructor(db: Db) {
    this.insert = db.prepare('INSERT INTO dashboard_sessions (key, accessor, created_at, expires_at) VALUES (?, ?, ?, ?)');
    this.byKey = db.prepare('SELECT accessor, expires_at AS expiresAt FROM dashboard_sessions WHERE key = ?');
    this.remove = db.prepare('DELETE FROM dashboard_sessions WHERE key = ?');
    this.expire = db.prepare('DELETE FROM dashboard_sessions WHERE expires_at < ?');
    this.count = db.prepare('SELECT count(*) AS n FROM dashboard_sessions').pluck();
    this.evictOldest = db.prepare('DELETE FROM dashboard_sessions WHERE key IN (SELECT key FROM dashboard_sessions ORDER BY created_at, rowid LIMIT ?)');
  }

  add(key: string, row: SessionRow, now: number): void {
    this.insert.run(key, row.accessor, now, row.expiresAt);
  }

  get(key: string): SessionRow | null {
    return (this.byKey.get(key) as SessionRow | undefined) ?? null;
  }

  delete(key: string): void {
    this.remove.run(key);
  }

  /** Drops expired sessions, then the oldest until fewer than `max` are left. */
  prune(now: number, max: number): void {
    this.expire.run(now);
    const over = (this.count.get() as number) - max + 1;
    if (over > 0) this.evictOldest.run(over);
  }
}
