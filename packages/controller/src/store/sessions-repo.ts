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
  private readonly orphans;
  private readonly evictUsersOldest;

  constructor(db: Db) {
    this.insert = db.prepare(
      'INSERT INTO dashboard_sessions (key, accessor, created_at, expires_at) VALUES (?, ?, ?, ?)',
    );
    this.byKey = db.prepare('SELECT accessor, expires_at AS expiresAt FROM dashboard_sessions WHERE key = ?');
    this.remove = db.prepare('DELETE FROM dashboard_sessions WHERE key = ?');
    this.expire = db.prepare('DELETE FROM dashboard_sessions WHERE expires_at < ?');
    // a revoked token's sessions can never be used again, and belong to no user's count
    this.orphans = db.prepare('DELETE FROM dashboard_sessions WHERE accessor NOT IN (SELECT accessor FROM api_tokens)');
    // a session belongs to the user of the token it stands for; all but the user's newest `keep` go
    this.evictUsersOldest = db.prepare(`DELETE FROM dashboard_sessions WHERE key IN (
      SELECT s.key FROM dashboard_sessions s JOIN api_tokens t ON t.accessor = s.accessor
      WHERE t.user_name = ? ORDER BY s.created_at DESC, s.rowid DESC LIMIT -1 OFFSET ?) RETURNING key`);
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

  /**
   * Drops expired sessions and those of revoked tokens, then `user`'s oldest until fewer
   * than `max` of theirs are left; nobody else's. Returns the keys of the sessions evicted
   * by that cap (expired and revoked ones have had their streams ended already).
   */
  prune(now: number, user: string, max: number): string[] {
    this.expire.run(now);
    this.orphans.run();
    return (this.evictUsersOldest.all(user, max - 1) as Array<{ key: string }>).map((r) => r.key);
  }
}
