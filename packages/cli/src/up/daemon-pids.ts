// Whether a recorded pid is still a rankd daemon: a pid may have been reused by anything since
// it was written down, and only a rankd process (of this instance, when asked) is ever signalled
// or counted as the holder of a directory.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

function argvOf(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return null;
  }
}

/** A running `rankd …` process (the CLI's main.js under node, or a rankd binary). */
export function isRankdProcess(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const argv = argvOf(pid);
  return argv !== null && argv.some((a) => a.endsWith('/main.js') || a.endsWith('/rankd'));
}

/** A running ephemeral rankd daemon started with `--work-dir workDir`: a daemon of that instance. */
export function isInstanceDaemon(pid: number, workDir: string): boolean {
  if (!isRankdProcess(pid)) return false;
  const argv = argvOf(pid)!;
  const at = argv.indexOf('--work-dir');
  return argv.includes('--ephemeral') && at >= 0 && resolve(argv[at + 1] ?? '') === resolve(workDir);
}
