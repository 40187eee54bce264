// How a job's ranks start, one strategy per --mpi mode (pmi1, openmpi, none), behind one
// interface: the lifecycle (job-lifecycle.ts) owns the job's states and calls each hook at
// its point of the job's life, as flux-core's job shell calls its builtins and Nomad's
// task runner its hooks. A strategy changes nothing of the job itself: it sends what its
// mode needs, keeps its own per-job state, and answers the lifecycle's questions.
//
// One start of a job's ranks is one attempt: `startRanks` opens it (every later call is for
// ranks an agent still had to start after a reconnect), and `released` closes it, after
// which the strategy keeps nothing of the job. A gang restart would release one attempt and
// start the next on the same hooks.
import type { MpiMode, RankLaunch } from '@rankd/protocol';
import type { JobRecord } from './job-records.js';
import type { LiveJobView } from './live-job.js';

export interface MpiStrategy {
  /**
   * Sends each node the starts of its ranks in `byNode` (all of the job's pending ranks, or
   * one node's after it reconnected). Why the job cannot start (a node is not connected), or
   * null once every start is sent.
   */
  startRanks(live: LiveJobView, byNode: ReadonlyMap<string, RankLaunch[]>, leaseMs: number): string | null;
  /** The job is stopping: ends what the mode runs beside the ranks (the lifecycle stops the ranks). */
  stopping(live: LiveJobView, reason: string, graceMs: number): void;
  /** Whether a job whose ranks have all ended stays live: the mode's own processes still run. */
  holdsEnd(live: LiveJobView): boolean;
  /** The attempt is over (the job ended): the strategy forgets it. */
  released(jobId: string): void;
}

/** One strategy for each mode: a mode without one does not compile. */
export type MpiStrategies = Readonly<Record<MpiMode, MpiStrategy>>;

export function mpiModeOf(job: Pick<JobRecord, 'submit'>): MpiMode {
  return job.submit.mpi ?? 'pmi1';
}
