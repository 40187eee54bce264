// The last lines a rank wrote to a stream: what `rankd run` quotes when an attempt fails.
import type { LogStore } from './log-store.js';

/** Enough for a few long lines (a Python traceback's last frame and its error). */
const TAIL_BYTES = 4096;

/** Up to `count` last non-empty lines of the stream, oldest first, each cut at 200 characters. */
export function lastLines(
  logs: Pick<LogStore, 'read' | 'size'>,
  id: string,
  rank: number,
  stream: 'stdout' | 'stderr',
  count = 3,
): string[] {
  const size = logs.size(id, rank, stream);
  if (size === 0) return [];
  // one byte before the tail too: whether the tail's first line is whole or cut
  const from = Math.max(0, size - TAIL_BYTES - 1);
  const text = logs.read(id, rank, stream, from, size - from).toString('utf8');
  // what comes before the first newline is a cut line (or nothing, when that byte is the
  // newline): drop it unless the tail holds the whole file
  const lines = text.split(/\r?\n/);
  if (from > 0) lines.shift();
  return lines
    .map((l) => l.trimEnd())
    .filter((l) => l.length > 0)
    .slice(-count)
    .map((l) => (l.length > 200 ? `${l.slice(0, 199)}…` : l));
}
