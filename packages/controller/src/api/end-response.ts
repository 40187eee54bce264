// Ending a streamed HTTP answer from the server's side, in bounded time.
import type { ServerResponse } from 'node:http';

/** How long a reader that does not read gets to take the last bytes before its connection is cut. */
const LAST_WORDS_MS = 500;

/**
 * Sends `last` (when given) and ends the answer. A reader that stops reading would hold the
 * end back for as long as it likes, so the connection is destroyed unless the answer is
 * fully written within LAST_WORDS_MS. Without `last` the connection is cut at once, without
 * the final chunk, so that no reader takes a cut-off stream for a complete one.
 */
export function endResponse(raw: ServerResponse, last?: string): void {
  if (raw.writableEnded || raw.destroyed) return;
  if (last === undefined) {
    raw.destroy();
    return;
  }
  const cut = setTimeout(() => raw.destroy(), LAST_WORDS_MS);
  cut.unref();
  raw.once('finish', () => clearTimeout(cut));
  raw.once('close', () => clearTimeout(cut));
  raw.end(last);
}
