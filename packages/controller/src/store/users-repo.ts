// Users, their roles and Unix users, and their API tokens.
//
// A token is `rankd_` + 256 random bits (base64url), shown once. The store keeps only the
// SHA-256 of the whole token (a slow hash is for passwords, not for random secrets) and a
// public accessor id, which names the token in lists and in the audit log. A presented
// token is hashed, looked up by its hash, and the stored hash is compared to the computed
// one in constant time. Nothing is cached: a revoked token fails on the very next request,
// and the events `tokenRevoked` and `userRemoved` let what a token holds open
// (streams/open-streams.ts) end with it.
import { EventEmitter } from 'node:events';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Role } from '@rankd/protocol';
import type { Db } from './database.js';

export interface UserRecord {
  name: string;
  role: Role;
  unixUser: string | null;
  createdAt: number;
}

export interface TokenRecord {
  accessor: string;
  user: string;
  description: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** Who a request comes from, once its token matched. */
export interface Principal {
  user: string;
  role: Role;
  unixUser: string | null;
  accessor: string;
}

export const TOKEN_PREFIX = 'rankd_';

export function newTokenSecret(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

type Row = Record<string, unknown>;
const toUser = (r: Row): UserRecord => ({
  name: r['name'] as string,
  role: r['role'] as Role,
  unixUser: (r['unix_user'] as string | null) ?? null,
  createdAt: r['created_at'] as number,
});
const toToken = (r: Row): TokenRecord => ({
  accessor: r['accessor'] as string,
  user: r['user_name'] as string,
  description: r['description'] as string,
  createdAt: r['created_at'] as number,
  lastUsedAt: (r['last_used_at'] as number | null) ?? null,
});

export class UsersRepo extends EventEmitter<{ tokenRevoked: [accessor: string]; userRemoved: [name: string] }> {
  private readonly byHash;
  private readonly touch;
  private readonly byAccessor;
  constructor(private readonly db: Db) {
    super();
    this.byAccessor = db.prepare(
      'SELECT t.accessor, u.name, u.role, u.unix_user FROM api_tokens t JOIN users u ON u.name = t.user_name WHERE t.accessor = ?',
    );
    this.byHash = db.prepare(
      `SELECT t.accessor, t.secret_sha256, t.last_used_at, u.name, u.role, u.unix_user FROM api_tokens t JOIN users u ON u.name = t.user_name WHERE t.secret_sha256 = ?`,
    );
    this.touch = db.prepare('UPDATE api_tokens SET last_used_at = ? WHERE accessor = ?');
  }

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n;
  }

  get(name: string): UserRecord | null {
    const row = this.db.prepare('SELECT * FROM users WHERE name = ?').get(name) as Row | undefined;
    return row ? toUser(row) : null;
  }

  list(): Array<UserRecord & { tokens: number }> {
    return (
      this.db
        .prepare(
          'SELECT u.*, (SELECT count(*) FROM api_tokens t WHERE t.user_name = u.name) AS tokens FROM users u ORDER BY u.name',
        )
        .all() as Row[]
    ).map((r) => ({
      ...toUser(r),
      tokens: r['tokens'] as number,
    }));
  }

  admins(): number {
    return (this.db.prepare(`SELECT count(*) AS n FROM users WHERE role = 'admin'`).get() as { n: number }).n;
  }

  /** Creates a user and its first token (an existing secret when given: the bootstrap file's). */
  add(user: UserRecord, secret = newTokenSecret(), description = 'first token'): { accessor: string; token: string } {
    return this.db.transaction(() => {
      this.db
        .prepare('INSERT INTO users (name, role, unix_user, created_at) VALUES (?, ?, ?, ?)')
        .run(user.name, user.role, user.unixUser, user.createdAt);
      return this.addToken(user.name, description, secret);
    })();
  }

  /** Removes a user and its tokens (the foreign key cascades); emits `userRemoved`. */
  remove(name: string): boolean {
    const removed = this.db.prepare('DELETE FROM users WHERE name = ?').run(name).changes > 0;
    if (removed) this.emit('userRemoved', name);
    return removed;
  }

  addToken(user: string, description: string, secret = newTokenSecret()): { accessor: string; token: string } {
    const accessor = randomBytes(8).toString('hex');
    this.db
      .prepare(
        'INSERT INTO api_tokens (accessor, user_name, secret_sha256, description, created_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run(accessor, user, sha256(secret), description, Date.now());
    return { accessor, token: secret };
  }

  tokens(user?: string): TokenRecord[] {
    const rows = user
      ? this.db.prepare('SELECT * FROM api_tokens WHERE user_name = ? ORDER BY created_at, accessor').all(user)
      : this.db.prepare('SELECT * FROM api_tokens ORDER BY user_name, created_at, accessor').all();
    return (rows as Row[]).map(toToken);
  }

  token(accessor: string): TokenRecord | null {
    const row = this.db.prepare('SELECT * FROM api_tokens WHERE accessor = ?').get(accessor) as Row | undefined;
    return row ? toToken(row) : null;
  }

  /** Revokes a token; emits `tokenRevoked`. */
  revoke(accessor: string): boolean {
    const revoked = this.db.prepare('DELETE FROM api_tokens WHERE accessor = ?').run(accessor).changes > 0;
    if (revoked) this.emit('tokenRevoked', accessor);
    return revoked;
  }

  /** The principal a token stands for now, by its accessor: null once revoked (dashboard sessions hold an accessor, never the secret). */
  principalOf(accessor: string): Principal | null {
    const row = this.byAccessor.get(accessor) as Row | undefined;
    return row
      ? {
          user: row['name'] as string,
          role: row['role'] as Role,
          unixUser: (row['unix_user'] as string | null) ?? null,
          accessor: row['accessor'] as string,
        }
      : null;
  }

  /** The principal of an "Authorization: Bearer <token>" header, or null. */
  authenticate(header: string | undefined): Principal | null {
    const secret = bearerSecret(header);
    if (!secret) return null;
    const digest = sha256(secret);
    const row = this.byHash.get(digest) as Row | undefined;
    if (!row) return null;
    const stored = row['secret_sha256'] as Buffer;
    if (stored.length !== digest.length || !timingSafeEqual(stored, digest)) return null;
    const now = Date.now();
    // last use to the minute: not a write per request
    if (((row['last_used_at'] as number | null) ?? 0) < now - 60_000) this.touch.run(now, row['accessor']);
    return {
      user: row['name'] as string,
      role: row['role'] as Role,
      unixUser: (row['unix_user'] as string | null) ?? null,
      accessor: row['accessor'] as string,
    };
  }
}

/** The token of a "Bearer <token>" header; tokens in query strings are never read. */
export function bearerSecret(header: string | undefined): string | null {
  if (!header || header.length > 1024) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}
