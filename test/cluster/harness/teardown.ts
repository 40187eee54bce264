// Teardown that always runs: on success and failure the tests call it, and for an
// interrupted test process (SIGINT, SIGTERM, SIGHUP, tap's SIGALRM at a timeout, an
// uncaught error) the process runs it on its way out. Everything registered here is synchronous for that reason.
//
// Cleanups run newest first, as resources were built on one another (daemons inside
// namespaces on a bridge behind a guard route).
import { constants } from 'node:os';

type Cleanup = () => void;

const cleanups: Array<{ id: number; what: string; fn: Cleanup }> = [];
let nextId = 1;
let installed = false;

/** Registers a synchronous cleanup; returns the function that runs it now (once) and unregisters it. */
export function registerCleanup(what: string, fn: Cleanup): () => void {
  install();
  const id = nextId++;
  cleanups.push({ id, what, fn });
  return () => {
    const i = cleanups.findIndex((c) => c.id === id);
    if (i < 0) return;
    cleanups.splice(i, 1);
    fn();
  };
}

/** Runs every registered cleanup, newest first. A failing one does not stop the others. */
export function runAllCleanups(): void {
  while (cleanups.length > 0) {
    const c = cleanups.pop()!;
    try {
      c.fn();
    } catch (err) {
      process.stderr.write(`cluster teardown: ${c.what}: ${(err as Error).message}\n`);
    }
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runAllCleanups);
  // SIGALRM is how tap ends a test file that ran out of time (SIGKILL follows 500 ms later)
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGALRM'] as const) {
    process.on(signal, () => {
      process.stderr.write(`cluster harness: ${signal}: tearing down\n`);
      runAllCleanups();
      // a listener replaces the default action, so end the process as the signal would have
      process.exit(128 + (constants.signals[signal] ?? 0));
    });
  }
}
