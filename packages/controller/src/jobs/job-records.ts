// The records of a job's life (JobRecord, RankRecord: what jobs-repo.ts stores and the
// lifecycle changes): a queued job's, its ranks' when it starts, and the view the
// scheduler takes of a stored job.
import type { Binding, JobState, JobSubmit, RankMap, RankState } from '@rankd/protocol';
import type { Allocation } from '@rankd/planner';
import type { Demand } from '../schedule/demand.js';
import type { QueuedJob } from '../schedule/placement.js';

export interface JobRecord {
  id: string;
  name: string | null;
  idempotencyKey: string | null;
  /** The rankd user who submitted it; null for jobs from before users existed. */
  owner: string | null;
  state: JobState;
  reason: string;
  submit: JobSubmit;
  /** Null while queued: planned when it starts, on what is free then. */
  rankMap: RankMap | null;
  priority: number;
  /** What its plan on the idle cluster asks for; null for jobs from before the queue. */
  demand: Demand | null;
  /** The cores and GPUs it holds once started; null while queued (and for jobs from before allocations). */
  allocation: Allocation | null;
  exitCode: number | null;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
}

export interface RankRecord {
  jobId: string;
  rank: number;
  node: string;
  state: RankState;
  pid: number | null;
  startedAt: number | null;
  endedAt: number | null;
  exitCode: number | null;
  signal: string | null;
  binding: Binding | null;
  error: string | null;
  warnings: string[];
  stdoutBytes: number;
  stderrBytes: number;
}

/** A newly admitted job, queued: no rank map until the scheduler starts it. */
export function queuedRecord(queued: QueuedJob, submit: JobSubmit, owner: string | null): JobRecord {
  return {
    id: queued.id,
    name: submit.name ?? null,
    idempotencyKey: submit.idempotencyKey ?? null,
    owner,
    state: 'queued',
    reason: 'submitted',
    submit,
    rankMap: null,
    priority: queued.priority,
    demand: queued.demand,
    allocation: null,
    exitCode: null,
    createdAt: queued.createdAt,
    startedAt: null,
    endedAt: null,
  };
}

/** The ranks of a job that starts on `rankMap`, none of them launched yet. */
export function pendingRanks(jobId: string, rankMap: RankMap): RankRecord[] {
  return rankMap.ranks.map((r) => ({
    jobId,
    rank: r.rank,
    node: r.node,
    state: 'pending',
    pid: null,
    startedAt: null,
    endedAt: null,
    exitCode: null,
    signal: null,
    binding: null,
    error: null,
    warnings: [],
    stdoutBytes: 0,
    stderrBytes: 0,
  }));
}

/** A queued job's record as the scheduler sees it. */
export function queuedJob(job: JobRecord): QueuedJob {
  return {
    id: job.id,
    owner: job.owner,
    priority: job.priority,
    createdAt: job.createdAt,
    spec: job.submit.placement ?? {},
    demand: job.demand!,
    timeLimitMs: job.submit.timeout === undefined ? null : job.submit.timeout * 1000,
  };
}

/** When a started job's --timeout ends it; Infinity without one. */
export function endsAt(job: JobRecord): number {
  return job.submit.timeout === undefined || job.startedAt === null
    ? Infinity
    : job.startedAt + job.submit.timeout * 1000;
}
