// A job while it has ranks: its records in memory, why it is stopping, and the cursors
// that answer "has every rank started / ended?" without walking the job at every report.
// Only the lifecycle (job-lifecycle.ts) holds a LiveJob; everyone else sees a LiveJobView.
import type { JobState } from '@rankd/protocol';
import { attemptId, type JobRecord, type RankRecord } from './job-records.js';
import { isTerminal } from './rank-status.js';

export interface LiveJob {
  job: JobRecord;
  /** The id its agents know this attempt by (attemptId()). */
  attemptId: string;
  ranks: RankRecord[];
  /** Set once the job is being stopped: the state it will end in, and why. */
  stopping: { state: JobState; reason: string } | null;
  /** Cancels the --timeout's timer, once armed. */
  cancelTimeout: (() => void) | null;
  /** Exits that arrived before all of their output: applied when the bytes catch up. */
  pendingExits: Map<number, PendingExit>;
  /** First non-zero rank status in order of arrival: the job's exit code. */
  firstFailure: number | null;
  /** The rank whose failure ended the attempt (the first to fail), when a rank did. */
  firstFailedRank: number | null;
  /** Nodes lost while the attempt ran: its next attempts leave them out. */
  lostNodes: Set<string>;
  /** When the current attempt was planned. */
  attemptStartedAt: number;
  /**
   * The first rank still pending and the first not yet ended (allStarted, allEnded). A rank
   * only moves forward (pending → running → ended, or pending → ended), so every rank before
   * either index stays past that point, and each question resumes where the last one stopped
   * instead of walking the job from rank 0 at every report: O(ranks) over the job's life.
   */
  firstPending: number;
  firstLive: number;
}

/** What readers (views, metrics, relays, MPI modes) see of a live job: they change it only through the lifecycle. */
export interface LiveJobView {
  readonly job: Readonly<JobRecord>;
  /** The id its agents know the current attempt by: the job's id for the first attempt, `<job>-<k>` after. */
  readonly attemptId: string;
  readonly ranks: ReadonlyArray<Readonly<RankRecord>>;
  readonly stopping: Readonly<{ state: JobState; reason: string }> | null;
}

/** True once no rank of the job is pending. */
export function allStarted(live: LiveJob): boolean {
  const { ranks } = live;
  let i = live.firstPending;
  while (i < ranks.length && ranks[i]!.state !== 'pending') i++;
  live.firstPending = i;
  return i === ranks.length;
}

/** True once every rank of the job has ended (isTerminal). */
export function allEnded(live: LiveJob): boolean {
  const { ranks } = live;
  let i = live.firstLive;
  while (i < ranks.length && isTerminal(ranks[i]!)) i++;
  live.firstLive = i;
  return i === ranks.length;
}

/** The nodes of a job's ranks, in rank order of first appearance. */
export function nodesOf(live: LiveJobView): string[] {
  return [...new Set(live.ranks.map((r) => r.node))];
}

export interface PendingExit {
  code: number | null;
  signal: string | null;
  endedAt: number;
  outputBytes: { stdout: number; stderr: number };
  error?: { code: string; message: string };
}

export function newLiveJob(job: JobRecord, ranks: RankRecord[]): LiveJob {
  return {
    job,
    attemptId: attemptId(job.id, job.attempt),
    ranks,
    stopping: null,
    cancelTimeout: null,
    pendingExits: new Map(),
    firstFailure: null,
    firstFailedRank: null,
    lostNodes: new Set(),
    attemptStartedAt: 0,
    firstPending: 0,
    firstLive: 0,
  };
}
