// Whether a failed attempt starts the job again (rankd run --max-restarts, --restart-on),
// after how long (--restart-delay, with backoff), and which nodes its failure leaves out.
// Pure: the lifecycle asks, the store keeps the answers.
import type { AttemptFailure, JobState, RestartOn } from '@rankd/protocol';
import type { AttemptRecord } from './attempts-repo.js';
import type { JobRecord } from './job-records.js';

/** Restarts closer together than this back off (torchelastic has no backoff; Kubernetes' CrashLoopBackOff does). */
export const QUICK_RESTART_MS = 60_000;
/** The longest a backoff grows to, unless --restart-delay itself is longer. */
export const MAX_BACKOFF_MS = 300_000;

/** Signals of a rank that say its node, not its program, is at fault: the node is left out of the next attempts. */
export const HARDWARE_SIGNALS: ReadonlySet<string> = new Set(['SIGBUS', 'SIGSEGV']);

export function maxRestarts(job: Pick<JobRecord, 'submit'>): number {
  return job.submit.maxRestarts ?? 0;
}

export function restartOn(job: Pick<JobRecord, 'submit'>): RestartOn {
  return job.submit.restartOn ?? 'any';
}

/**
 * Whether an attempt that ended in `state` with `exitCode` restarts the job: only failures
 * (never success, cancel or timeout), only those --restart-on names, and only while the
 * budget lasts.
 */
export function restarts(job: Pick<JobRecord, 'submit' | 'attempt'>, state: JobState, exitCode: number): boolean {
  if (job.attempt >= maxRestarts(job)) return false;
  if (state !== 'failed' && state !== 'lost') return false;
  const on = restartOn(job);
  if (on === 'any') return true;
  if (on === 'node-lost') return state === 'lost';
  return on.includes(exitCode);
}

/**
 * How long the job waits before its next attempt. The first restart, and any restart more
 * than a minute after the one before, waits --restart-delay; each restart within a minute
 * of the one before doubles the wait from max(delay, 1 s), up to MAX_BACKOFF_MS: a job
 * that fails at once cannot spin the cluster through its whole budget in seconds.
 * `history` holds the job's attempts, the one that just ended last.
 */
export function restartDelayMs(delaySeconds: number, history: readonly AttemptRecord[]): number {
  const base = Math.round(delaySeconds * 1000);
  let quick = 0;
  // attempt 0 was not started by a restart: only restarted attempts that failed fast count
  for (let i = history.length - 1; i >= 1; i--) {
    const a = history[i]!;
    if (a.endedAt === null || a.endedAt - a.startedAt >= QUICK_RESTART_MS) break;
    quick++;
  }
  if (quick === 0) return base;
  return Math.min(Math.max(base, 1000) * 2 ** (quick - 1), Math.max(base, MAX_BACKOFF_MS));
}

/**
 * The nodes an attempt's failure leaves out of the job's next attempts: every node lost
 * while it ran, and the first failure's node when a hardware-like signal killed its rank.
 */
export function failedNodes(lost: ReadonlySet<string>, failure: AttemptFailure | null): string[] {
  const nodes = new Set(lost);
  if (failure?.signal && HARDWARE_SIGNALS.has(failure.signal)) nodes.add(failure.node);
  return [...nodes];
}

/** "rank 5 on node c exited 1 (last line: "CUDA error …")": the failure as `rankd run` prints it. */
export function describeFailure(f: AttemptFailure): string {
  const last = f.lastLines.at(-1);
  return last === undefined ? f.reason : `${f.reason} (last line: ${JSON.stringify(last)})`;
}

/** "restart 2/3": the attempt about to start, 1-based among the restarts the job may take. */
export function restartLabel(job: Pick<JobRecord, 'submit' | 'attempt'>): string {
  return `restart ${job.attempt}/${maxRestarts(job)}`;
}
