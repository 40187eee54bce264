// The few system commands the harness runs (ip, setpriv), synchronously and bounded in
// time: setup and teardown must also work from a process 'exit' handler, where nothing
// asynchronous runs any more.
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

const COMMAND_TIMEOUT_MS = 10_000;

export class CommandError extends Error {
  constructor(
    readonly argv: string[],
    readonly stderr: string,
  ) {
    super(`${argv.join(' ')}: ${stderr.trim() || 'failed'}`);
  }
}

/** Runs `ip ARGS…` and returns its stdout; throws CommandError with ip's own message. */
export function ip(...args: string[]): string {
  return run(['ip', ...args]);
}

/** Like ip() but false instead of an error: for teardown steps whose object may already be gone. */
export function ipQuiet(...args: string[]): boolean {
  try {
    run(['ip', ...args]);
    return true;
  } catch {
    return false;
  }
}

function run(argv: string[]): string {
  try {
    return execFileSync(argv[0]!, argv.slice(1), {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: COMMAND_TIMEOUT_MS,
    });
  } catch (err) {
    const e = err as { stderr?: string | Buffer; message: string };
    throw new CommandError(argv, e.stderr ? e.stderr.toString() : e.message);
  }
}

/** Absolute path of a program on PATH (or the usual sbin directories), or null. */
export function which(program: string): string | null {
  const dirs = [...(process.env['PATH'] ?? '').split(':'), '/usr/sbin', '/sbin', '/usr/bin', '/bin'];
  for (const dir of dirs) {
    if (!dir) continue;
    try {
      accessSync(`${dir}/${program}`, constants.X_OK);
      return `${dir}/${program}`;
    } catch {
      // not here
    }
  }
  return null;
}

/** Pids of every process in a named network namespace (`ip netns pids`). */
export function netnsPids(netns: string): number[] {
  try {
    return ip('netns', 'pids', netns)
      .split('\n')
      .filter((l) => /^\d+$/.test(l.trim()))
      .map(Number);
  } catch {
    return [];
  }
}
