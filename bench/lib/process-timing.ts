// Wall time of one process, from spawn to the moment its output is fully drained.
// "Drained" rather than "exited": a launcher that exits before forwarding its ranks'
// last lines has not finished the job a user asked of it.
import { spawn } from 'node:child_process';
import { summarize } from './stats.js';
import { onTeardown } from './teardown.js';

export interface ProcessRun {
  ms: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdoutBytes: number;
  /** Newlines seen on stdout: what a log follower would count. */
  stdoutLines: number;
  /** Kept only when asked for (captureStdout), so large outputs cost no memory. */
  stdout: string;
  /** The last few KiB of stderr, for error messages. */
  stderrTail: string;
  timedOut: boolean;
}

export interface ProcessOptions {
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  captureStdout?: boolean;
  /** Called with each stdout chunk as it arrives (used to timestamp lines). */
  onStdout?: (chunk: Buffer) => void;
  /**
   * 'open': stdin is a pipe that stays open and silent until the process ends, as a
   * terminal nobody types into: what a launcher that forwards stdin meets at a prompt.
   * Default 'ignore' (/dev/null).
   */
  stdin?: 'ignore' | 'open';
}

const STDERR_TAIL = 4096;

export class ProcessFailedError extends Error {
  override readonly name = 'ProcessFailedError';
  readonly code = 'BENCH_PROCESS_FAILED';
  constructor(
    readonly argv: readonly string[],
    readonly run: ProcessRun,
  ) {
    const how = run.timedOut ? 'timed out' : run.signal ? `was killed by ${run.signal}` : `exited with ${run.code}`;
    const tail = run.stderrTail.trim().split('\n').slice(-3).join(' | ');
    super(`${argv.join(' ')} ${how}${tail ? `: ${tail}` : ''}`);
  }
}

/**
 * Runs argv in its own process group, so that a timeout can end the whole tree this run
 * started (the launcher and whatever it forked) by that one group id, and nothing else.
 */
export function runProcess(argv: readonly string[], opts: ProcessOptions): Promise<ProcessRun> {
  const [file, ...args] = argv;
  if (!file) throw new TypeError('runProcess: empty argv');
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(file, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: [opts.stdin === 'open' ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
    // a launcher that stops reading may close its end first: that is not the run's failure
    child.stdin?.on('error', () => {});
    let stdoutBytes = 0;
    let stdoutLines = 0;
    let stdout = '';
    let stderrTail = '';
    let timedOut = false;
    let code: number | null = null;
    let signal: NodeJS.Signals | null = null;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, opts.timeoutMs);
    // An interrupted bench must not leave a launcher (and its ranks) running.
    const untrack = onTeardown(`process ${argv[0]}`, () => killGroup(child.pid));

    child.stdout!.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      // Counting newlines byte-wise: decoding 40 MB of log to count them would cost more than reading it.
      let at = chunk.indexOf(10);
      while (at !== -1) {
        stdoutLines++;
        at = chunk.indexOf(10, at + 1);
      }
      if (opts.captureStdout) stdout += chunk.toString('utf8');
      opts.onStdout?.(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      untrack.forget();
      reject(err);
    });
    child.on('exit', (c, s) => {
      code = c;
      signal = s;
    });
    child.on('close', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      child.stdin?.destroy();
      clearTimeout(timer);
      // Nothing left to kill, and a teardown must never signal a pid the kernel has reused.
      untrack.forget();
      resolve({ ms, code, signal, stdoutBytes, stdoutLines, stdout, stderrTail, timedOut });
    });
  });
}

/** Time of a run that must succeed; anything else is an error naming the command and its stderr. */
export async function timeProcess(argv: readonly string[], opts: ProcessOptions): Promise<ProcessRun> {
  const run = await runProcess(argv, opts);
  if (run.timedOut || run.code !== 0) throw new ProcessFailedError(argv, run);
  return run;
}

/** Median wall time of `rounds` runs of argv, one after the other (for floors and probes, not comparisons). */
export async function medianProcessMs(
  argv: readonly string[],
  rounds: number,
  opts: Partial<ProcessOptions> = {},
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) times.push((await timeProcess(argv, { timeoutMs: 60_000, ...opts })).ms);
  return summarize(times).median;
}

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}
