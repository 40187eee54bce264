// Every long-lived stream a principal holds open — log follows, /v1/events, shell sessions,
// running execs — by the credential that opened it, so that revoking the credential ends them at once.
//
// Authentication happens when a request arrives; a stream that outlives its request would
// otherwise keep a revoked token's access for as long as it stays open (a follow for the
// rest of its job). So revocation is a push: revoking a token, removing a user or ending a
// dashboard session ends every matching stream here, synchronously, before the revoking
// request is answered. A dashboard session's streams also end when the session expires.
import { ErrorCode } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { Principal } from '../store/users-repo.js';

/** Who opened a stream. */
export interface StreamOwner {
  /** The token's accessor (a dashboard session stands for the token that opened it). */
  accessor: string;
  user: string;
  /** The dashboard session's key (the SHA-256 of its id) when the stream came with its cookie. */
  session: string | null;
  /** When the credential lapses by itself (a dashboard session's expiry); null for API tokens. */
  expiresAt: number | null;
}

/** Who a request's stream belongs to: its token, its user, and its dashboard session if it came with one. */
export function streamOwner(
  principal: Principal,
  session: { key: string; expiresAt: number } | null = null,
): StreamOwner {
  const { accessor, user } = principal;
  return { accessor, user, session: session?.key ?? null, expiresAt: session?.expiresAt ?? null };
}

/** Why a stream was ended: told to its reader where the stream's format has room for it. */
export interface StreamEnd {
  code: string;
  message: string;
}

/** Ends one stream: says why where it can, closes it, and releases what it held. Must not throw. */
export type EndStream = (why: StreamEnd) => void;

interface Entry {
  owner: StreamOwner;
  end: EndStream;
  expiry: NodeJS.Timeout | null;
}

// setTimeout's largest delay; a session lives 12 h at most, far below it
const MAX_TIMER_MS = 2 ** 31 - 1;

export class OpenStreams {
  private readonly entries = new Set<Entry>();

  constructor(
    private readonly log: Pick<Logger, 'error'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Tracks a stream until the returned function is called (call it when the stream closes for any reason). */
  add(owner: StreamOwner, end: EndStream): () => void {
    const entry: Entry = { owner, end, expiry: null };
    this.entries.add(entry);
    if (owner.expiresAt !== null) {
      const ms = Math.min(Math.max(0, owner.expiresAt - this.now()), MAX_TIMER_MS);
      entry.expiry = setTimeout(
        () => this.endEntry(entry, revoked('its dashboard session expired; sign in again')),
        ms,
      );
      entry.expiry.unref();
    }
    return () => this.forget(entry);
  }

  /** A token was revoked: its streams end, those of dashboard sessions it opened included. */
  revokeToken(accessor: string): number {
    return this.endWhere((o) => o.accessor === accessor, revoked(`its API token ${accessor} was revoked`));
  }

  /** A user was removed: every stream of every token of it ends. */
  removeUser(user: string): number {
    return this.endWhere((o) => o.user === user, revoked(`its user "${user}" was removed`));
  }

  /** A dashboard session ended (signed out, or evicted by its user's cap): the streams opened with its cookie end. */
  endSession(sessionKey: string, reason = 'its dashboard session was signed out'): number {
    return this.endWhere((o) => o.session === sessionKey, revoked(reason));
  }

  get size(): number {
    return this.entries.size;
  }

  private endWhere(matches: (owner: StreamOwner) => boolean, why: StreamEnd): number {
    let n = 0;
    for (const entry of [...this.entries]) {
      if (!matches(entry.owner)) continue;
      this.endEntry(entry, why);
      n++;
    }
    return n;
  }

  private endEntry(entry: Entry, why: StreamEnd): void {
    this.forget(entry);
    try {
      entry.end(why);
    } catch (err) {
      // one stream that fails to end must not keep the others open, nor undo the revocation
      this.log.error(
        { err, owner: { accessor: entry.owner.accessor, user: entry.owner.user } },
        'an open stream failed to end on revocation',
      );
    }
  }

  private forget(entry: Entry): void {
    if (entry.expiry) clearTimeout(entry.expiry);
    this.entries.delete(entry);
  }
}

function revoked(what: string): StreamEnd {
  return { code: ErrorCode.CredentialRevoked, message: `ended: ${what}` };
}
