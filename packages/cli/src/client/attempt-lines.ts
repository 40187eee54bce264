// What the terminal says about a job's attempts: the line `rankd run` prints when one fails
// and the job restarts, and the heading `rankd logs` puts before each attempt's output.
// Attempts are counted from 1 here, out of maxRestarts + 1 (RANKD_ATTEMPT is this minus 1).
import type { JobView } from '@rankd/protocol';
import type { AttemptFailureInfo, AttemptFrame, RestartFrame } from './log-frames.js';

/** Longer last lines are cut: the line is a pointer, `rankd logs --attempt` has the rest. */
const LAST_LINE_CHARS = 160;

/**
 * `attempt 1/3 failed: rank 5 on node c exited 1 (last line: "CUDA error …"); restarting
 * without node c in 0 s`.
 */
export function restartLine(r: RestartFrame): string {
  const failed = r.failure ? describeFailure(r.failure) : r.reason;
  const without =
    r.excluded.length === 0 ? '' : ` without node${r.excluded.length > 1 ? 's' : ''} ${r.excluded.join(',')}`;
  const attempt = attemptLabel(r.attempt, r.maxRestarts);
  return `${attempt} failed: ${failed}; restarting${without} in ${seconds(r.delay)} s`;
}

/** `rank 5 on node c exited 1 (last line: "…")`. */
export function describeFailure(f: AttemptFailureInfo): string {
  const where = `rank ${f.rank} on node ${f.node}`;
  // failed to start, or lost with its node: the controller's sentence says more than a code
  const how =
    f.state !== 'exited'
      ? f.reason
      : f.signal !== null
        ? `${where} was killed by ${f.signal}`
        : `${where} exited ${f.exitCode}`;
  const last = f.lastLines.at(-1);
  if (last === undefined) return how;
  const cut = last.length > LAST_LINE_CHARS ? `${last.slice(0, LAST_LINE_CHARS)}…` : last;
  return `${how} (last line: ${JSON.stringify(cut)})`;
}

/** `attempt 1/3` (1-based, out of every attempt the job may take). */
export function attemptLabel(attempt: number, maxRestarts: number): string {
  return `attempt ${attempt + 1}/${maxRestarts + 1}`;
}

/**
 * `==> attempt 1/3 (nodes a,b; failed: rank 1 on node b exited 3) <==`: how the attempt ended
 * as the job's view told it when `rankd logs` began (running for one that started since).
 */
export function attemptHeading(job: JobView, a: AttemptFrame): string {
  const view = job.attempts.find((x) => x.attempt === a.attempt);
  const nodes = `nodes ${a.nodes.join(',') || '-'}`;
  const state = !view || view.endedAt === null ? 'running' : view.state;
  const how = view?.firstFailure ? `${state}: ${describeFailure(view.firstFailure)}` : state;
  return `==> ${attemptLabel(a.attempt, job.maxRestarts)} (${nodes}; ${how}) <==`;
}

function seconds(s: number): string {
  return Number.isInteger(s) ? String(s) : s.toFixed(1);
}
