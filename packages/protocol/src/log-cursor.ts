// The resume token of a log stream: where each selected stream stands, e.g.
// "0o120.0e0.1o55" (rank 0 stdout at byte 120, …). The controller sends it as SSE ids;
// a client sends it back as Last-Event-ID, whatever the format it reads. Free of
// schemas, so that the CLI can use it without loading the schema library.
import type { StreamName } from './messages/jobs.js';

export interface LogCursor {
  rank: number;
  stream: StreamName;
  /** The next byte to read. */
  offset: number;
}

/** The key of one stream in a decoded token: "0o", "3e". */
export function cursorKey(rank: number, stream: StreamName): string {
  return `${rank}${stream === 'stdout' ? 'o' : 'e'}`;
}

export function encodeCursors(cursors: Iterable<LogCursor>): string {
  const parts: string[] = [];
  for (const c of cursors) parts.push(`${cursorKey(c.rank, c.stream)}${c.offset}`);
  return parts.join('.');
}

/** Offsets by cursorKey; unknown or malformed parts are ignored. */
export function decodeCursors(token: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of token.split('.')) {
    const m = /^(\d+)([oe])(\d+)$/.exec(part);
    if (m) out.set(`${m[1]}${m[2]}`, Number(m[3]));
  }
  return out;
}

/**
 * A token that also says which attempt of a job it stands in: "a2:0o120.0e0" (attempt 2), or
 * the bare cursors for the first attempt, so that a job that never restarted keeps its tokens.
 */
export function encodeResume(attempt: number, cursors: Iterable<LogCursor>): string {
  const token = encodeCursors(cursors);
  return attempt > 0 ? `a${attempt}:${token}` : token;
}

/** The attempt (null when the token names none) and the offsets of a resume token. */
export function decodeResume(token: string): { attempt: number | null; offsets: Map<string, number> } {
  const m = /^a(\d{1,9}):(.*)$/s.exec(token);
  if (!m) return { attempt: token === '' ? null : 0, offsets: decodeCursors(token) };
  return { attempt: Number(m[1]), offsets: decodeCursors(m[2]!) };
}
