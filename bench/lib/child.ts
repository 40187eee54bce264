// Long-running helpers the bench starts (slurmctld, slurmd, controllers, agents): started
// with their output in a log file, and stopped by the pid we got from spawn — never by
// name — with a grace period before SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Daemon {
  name: string;
  pid: number;
  child: ChildProcess;
  logFile: string;
  exited: boolean;
  stop(graceMs?: number): Promise<void>;
}

export function startDaemon(
  name: string,
  argv: readonly string[],
  /** pipes: stdin and stdout are pipes to talk to it over (simulators); stderr still goes to the log. */
  opts: { logFile: string; env?: NodeJS.ProcessEnv; cwd?: string; pipes?: boolean },
): Daemon {
  const [file, ...args] = argv;
  if (!file) throw new TypeError('startDaemon: empty argv');
  const fd = openSync(opts.logFile, 'a');
  const stdio = opts.pipes ? (['pipe', 'pipe', fd] as const) : (['ignore', fd, fd] as const);
  const child = spawn(file, args, { stdio: [...stdio], env: opts.env ?? process.env, cwd: opts.cwd });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`${name}: spawn failed`);
  const daemon: Daemon = {
    name,
    pid: child.pid,
    child,
    logFile: opts.logFile,
    exited: false,
    async stop(graceMs = 5000) {
      if (daemon.exited) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      signal(daemon.pid, 'SIGTERM');
      const deadline = sleep(graceMs).then(() => 'late' as const);
      if ((await Promise.race([gone.then(() => 'gone' as const), deadline])) === 'late') {
        signal(daemon.pid, 'SIGKILL');
        await Promise.race([gone, sleep(2000)]);
      }
    },
  };
  child.once('exit', () => {
    daemon.exited = true;
  });
  child.once('error', () => {
    daemon.exited = true;
  });
  return daemon;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** Polls `check` until it returns true; false once timeoutMs has passed. */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  everyMs = 200,
): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await sleep(everyMs);
  }
  return false;
}
