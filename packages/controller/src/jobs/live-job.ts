// A job while it has ranks: its records in memory, why it is stopping, and the cursors
// that answer "has every rank started / ended?" without walking the job at every report.
import type { JobState } from '@rankd/protocol';
import type { JobRecord, RankRecord } from '../store/jobs-repo.js';
import { isTerminal } from './rank-status.js';

export interface LiveJob {
  job: JobRecord;
  ranks: RankRecord[];
  /** Set once the job is being stopped: the state it will end in, and why. */
  stopping: { state: JobState; reason: string } | null;
  timeout: NodeJS.Timeout | null;
  /** Exits that arrived before all of their output: applied when the bytes catch up. */
  pendingExits: Map<number, PendingExit>;
  /** First non-zero rank status in order of arrival: the job's exit code. */
  firstFailure: number | null;
  /**
   * The first rank still pending and the first not yet ended (allStarted, allEnded). A rank
   * only moves forward (pending → running → ended, or pending → ended), so every rank before
   * either index stays past that point, and each question resumes where the last one stopped
   * instead of walking the job from rank 0 at every report: O(ranks) over the job's life.
   */
  firstPending: number;
  firstLive: number;
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

export interface PendingExit {
  code: number | null;
  signal: string | null;
  endedAt: number;
  outputBytes: { stdout: number; stderr: number };
  error?: { code: string; message: string };
}

export function newLiveJob(job: JobRecord, ranks: RankRecord[]): LiveJob {
  return { job, ranks, stopping: null, timeout: null, pendingExits: new Map(), firstFailure: null, firstPending: 0, firstLive: 0 };
}
