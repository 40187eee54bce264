// One start at a time per instance home: two `rankd up` at once in one job (or one pod) would
// both find no running instance and both start one, the second's controller and agents then
// failing on the first's and its cleanup ending the first's steps. The second waits for the
// first to be ready (then attaches to it) or to fail (then starts its own). The lock itself
// is the work directory's (up/work-dir.ts): the last daemon of an ending instance takes it
// too before it removes the directory, so it never removes one a new start is filling.
import { constants } from 'node:os';
import { CliError, ExitCode } from '../exit-codes.js';
import { runningDaemons } from './daemon-process.js';
import { ensureWorkDir, leaveWorkDir, tryStartLock } from './work-dir.js';

/**
 * Takes the start lock of `home` (checked by openInstanceHome first), waiting up to
 * `timeoutMs` for another `up` that holds it; resolves with its release.
 */
export async function takeStartLock(home: string, timeoutMs: number): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  let told = false;
  for (;;) {
    // the other up failed, or its instance ended, and the directory went with it: this one starts afresh
    ensureWorkDir(home);
    const release = tryStartLock(home);
    if (release) {
      const unguard = guardStart(home);
      return () => {
        unguard();
        release();
      };
    }
    if (Date.now() >= deadline)
      throw new CliError(
        `another "rankd up" has been starting the instance in ${home} for ${timeoutMs / 1000} s: ` +
          'wait for it, or end it',
        ExitCode.Unreachable,
      );
    if (!told) process.stderr.write(`rankd: another "rankd up" is starting the instance in ${home}: waiting\n`);
    told = true;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * While the instance starts, a SIGINT or SIGTERM (nothing else listens yet) would end this
 * process and leave its daemons running and the directory behind: they are stopped, and the
 * directory removed, first. Resolves with the guard's removal, once the start is over.
 */
function guardStart(home: string): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.stderr.write(`rankd: ${signal} while the instance starts: stopping what was started\n`);
    void Promise.all(runningDaemons().map((d) => d.stop())).then(() => {
      leaveWorkDir(home, null);
      process.exit(128 + (constants.signals[signal] ?? 0));
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
