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
  /** Its current (or last) attempt, 0-based: how many times it restarted. */
  attempt: number;
  /** Nodes its failed attempts left out of its next ones. */
  excluded: string[];
  /** When a restarting job's next attempt joins the queue (--restart-delay); null otherwise. */
  restartAt: number | null;
}

export interface RankRecord {
  jobId: string;
  /** The attempt the rank belongs to: each attempt has ranks of its own. */
  attempt: number;
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
    attempt: 0,
    excluded: [],
    restartAt: null,
  };
}

/** The ranks of a job's attempt that starts on `rankMap`, none of them launched yet. */
export function pendingRanks(jobId: string, attempt: number, rankMap: RankMap): RankRecord[] {
  return rankMap.ranks.map((r) => ({
    jobId,
    attempt,
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
    excluded: new Set(job.excluded),
    restarting: job.attempt > 0,
    ...(job.restartAt === null ? {} : { notBefore: job.restartAt }),
  };
}

/**
 * The id an attempt's messages carry to and from the agents: the job's own for the first,
 * `<job>-<k>` after. Agents keep spools, PMI namespaces and Open MPI daemons by it, so two
 * attempts of one job never share any of them, and a late report of an ended attempt finds
 * no live job (generated job ids have no `-`, so these never name another job).
 */
export function attemptId(jobId: string, attempt: number): string {
  return attempt === 0 ? jobId : `${jobId}-${attempt}`;
}

/** When a started job's --timeout ends it; Infinity without one. */
export function endsAt(job: JobRecord): number {
  return job.submit.timeout === undefined || job.startedAt === null
    ? Infinity
    : job.startedAt + job.submit.timeout * 1000;
}
