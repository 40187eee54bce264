// The one place that handles our stdout's reader going away (`rankd logs ID | head -1`),
// or stderr's (`rankd run … 2>&1 | head -1`). Node ignores SIGPIPE, so a write then fails
// with EPIPE, which would end the process with a stack trace. Instead rankd ends as a program killed by SIGPIPE is seen by its shell:
// quietly, with status 141 (128 + SIGPIPE), which is what `git log | head -1` or
// `yes | head -1` report too. A command that holds work elsewhere (run: a live job)
// registers what to do first; every other command exits at once.
import { constants } from 'node:os';

/** What a shell reports for a pipeline member killed by SIGPIPE. */
export const CLOSED_STDOUT_STATUS = 128 + constants.signals.SIGPIPE;

let closed = false;
const handlers = new Set<() => void>();

/** Installed once by the CLI's entry, before any command writes. */
export function watchStdout(): void {
  // a C program is killed by SIGPIPE on either: both end the command the same way
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      // any other write error is a real failure: let it surface as one
      if (err.code !== 'EPIPE') throw err;
      if (closed) return;
      closed = true;
      if (handlers.size === 0) process.exit(CLOSED_STDOUT_STATUS);
      for (const handler of handlers) handler();
    });
  }
}

/**
 * Runs `handler` instead of exiting when stdout closes; the command then ends itself (and
 * should exit with CLOSED_STDOUT_STATUS). Returns the function that removes the handler.
 */
export function onStdoutClosed(handler: () => void): () => void {
  handlers.add(handler);
  return () => handlers.delete(handler);
}
