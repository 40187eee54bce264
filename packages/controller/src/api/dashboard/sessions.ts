// Dashboard sessions: one-time login codes and the browser sessions they open.
//
// A browser never holds an API token. `rankd dashboard` asks for a login code with the
// caller's token; the code opens one session and is gone (Jupyter's login URL). A session
// stands for the token it was opened with, by accessor: each request looks that token up
// again, so revoking the token, removing its user or changing the role takes effect on the
// very next request. Codes and session ids are 256 random bits and only their SHA-256 is
// kept. Sessions are in the store, so a controller restart signs no browser out; codes,
// good for minutes and one use, stay in memory. A session's CSRF token is derived from its
// id (one-way), so the store holds nothing a browser could be impersonated with.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionsRepo } from '../../store/sessions-repo.js';
import type { Principal, UsersRepo } from '../../store/users-repo.js';
import { sha256 } from '../../store/users-repo.js';

export const SESSION_COOKIE = 'rankd_session';
export const CSRF_HEADER = 'x-rankd-csrf';
/** A login code is good for one use within this time. */
export const LOGIN_CODE_TTL_MS = 5 * 60_000;
export const SESSION_TTL_MS = 12 * 3600_000;
// Bounds on what one user can make the controller hold: past them that user's oldest entry
// goes, never another user's (a global bound would let one reader sign everyone else out).
// Only signed-in users mint codes and open sessions, so the whole is bounded by the users.
export const MAX_CODES_PER_USER = 10;
export const MAX_SESSIONS_PER_USER = 20;

interface Pending {
  accessor: string;
  user: string;
  expiresAt: number;
}

export interface OpenedSession {
  id: string;
  csrf: string;
  principal: Principal;
  expiresAt: number;
}

const key = (secret: string): string => sha256(secret).toString('base64url');
/** The name a session is kept and tracked under (never its id). */
export const sessionKey = key;
const secret = (): string => randomBytes(32).toString('base64url');
/** Only the holder of the session id (its HttpOnly cookie, so the controller) can compute it. */
const csrfOf = (id: string): string => sha256(`rankd-csrf:${id}`).toString('base64url');

export class DashboardSessions {
  // Map keeps insertion order: a user's first entry is their oldest, evicted first
  private readonly codes = new Map<string, Pending>();

  constructor(
    private readonly users: UsersRepo,
    private readonly sessions: SessionsRepo,
    /** A session was evicted by its user's cap: whatever it holds open must end now (streams/open-streams.ts). */
    private readonly evicted: (key: string) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  /** A one-time login code for the token `principal` authenticated with. */
  mintCode(principal: Principal): { code: string; expiresAt: number } {
    this.prune(this.codes);
    this.dropOldestCodes(principal.user, MAX_CODES_PER_USER - 1);
    const code = secret();
    const expiresAt = this.now() + LOGIN_CODE_TTL_MS;
    this.codes.set(key(code), { accessor: principal.accessor, user: principal.user, expiresAt });
    return { code, expiresAt };
  }

  /** Redeems a login code: a new session, or null for a code that is unknown, used or expired. */
  redeem(code: string): OpenedSession | null {
    const k = key(code);
    const pending = this.codes.get(k);
    this.codes.delete(k);
    if (!pending || pending.expiresAt < this.now()) return null;
    const principal = this.users.principalOf(pending.accessor);
    return principal ? this.open(principal) : null;
  }

  /** A new session for an authenticated principal (a code redeemed, or an API token pasted). */
  open(principal: Principal): OpenedSession {
    const now = this.now();
    for (const k of this.sessions.prune(now, principal.user, MAX_SESSIONS_PER_USER)) this.evicted(k);
    const id = secret();
    const expiresAt = now + SESSION_TTL_MS;
    this.sessions.add(key(id), { accessor: principal.accessor, expiresAt }, now);
    return { id, csrf: csrfOf(id), principal, expiresAt };
  }

  /** The session of a cookie value and who it stands for now; null when it is unknown, expired or its token revoked. */
  lookup(id: string): { key: string; principal: Principal; csrf: string; expiresAt: number } | null {
    const k = key(id);
    const session = this.sessions.get(k);
    if (!session) return null;
    const principal = session.expiresAt >= this.now() ? this.users.principalOf(session.accessor) : null;
    if (!principal) {
      this.sessions.delete(k);
      return null;
    }
    return { key: k, principal, csrf: csrfOf(id), expiresAt: session.expiresAt };
  }

  close(id: string): void {
    this.sessions.delete(key(id));
  }

  private prune(map: Map<string, Pending>): void {
    const now = this.now();
    for (const [k, v] of map) if (v.expiresAt < now) map.delete(k);
  }

  /** Leaves `user` at most `keep` codes, dropping the oldest (the Map's first). */
  private dropOldestCodes(user: string, keep: number): void {
    const mine = [...this.codes].filter(([, v]) => v.user === user);
    for (const [k] of mine.slice(0, Math.max(0, mine.length - keep))) this.codes.delete(k);
  }
}

/** Whether a presented CSRF token is the session's, in constant time. */
export function csrfMatches(presented: string | string[] | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
