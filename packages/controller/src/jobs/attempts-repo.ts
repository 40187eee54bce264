// The attempts of jobs (rankd run --max-restarts) and the failures of nodes they record.
// An attempt's row is written when its ranks are planned and again when its last rank's
// exit is recorded; the jobs repository ends one attempt and queues the next in one
// transaction (JobsRepo.restart), so no count is skipped or repeated across a crash.
import type { AttemptFailure, JobState } from '@rankd/protocol';
import type { Db } from '../store/database.js';

type Row = Record<string, unknown>;

export interface AttemptRecord {
  jobId: string;
  attempt: number;
  /** running while its ranks run (once stopped, the end it stops for, endedAt still null); how it ended otherwise. */
  state: JobState;
  reason: string;
  nodes: string[];
  startedAt: number;
  endedAt: number | null;
  exitCode: number | null;
  firstFailure: AttemptFailure | null;
  /** Nodes its failure left out of the job's next attempts (while it is stopped: the nodes lost so far). */
  excluded: string[];
  /** How long the job waited before its next attempt was queued; null for its last. */
  restartDelayMs: number | null;
}

/** A node that failed an attempt: lost, or a rank of it killed by a hardware-like signal. */
export interface NodeFailure {
  node: string;
  at: number;
  jobId: string;
  attempt: number;
  reason: string;
}

export class AttemptsRepo {
  private readonly upsert;
  private readonly ofJob;
  private readonly insertFailure;
  private readonly failuresOf;

  constructor(db: Db) {
    this.upsert = db.prepare(`INSERT INTO attempts
        (job_id, attempt, state, reason, nodes, started_at, ended_at, exit_code, first_failure, excluded, restart_delay)
      VALUES (@jobId, @attempt, @state, @reason, @nodes, @startedAt, @endedAt, @exitCode, @firstFailure, @excluded,
        @restartDelayMs)
      ON CONFLICT (job_id, attempt) DO UPDATE SET state = excluded.state, reason = excluded.reason,
        ended_at = excluded.ended_at, exit_code = excluded.exit_code, first_failure = excluded.first_failure,
        excluded = excluded.excluded, restart_delay = excluded.restart_delay`);
    this.ofJob = db.prepare('SELECT * FROM attempts WHERE job_id = ? ORDER BY attempt');
    this.insertFailure = db.prepare(
      'INSERT INTO node_failures (node, at, job_id, attempt, reason) VALUES (@node, @at, @jobId, @attempt, @reason)',
    );
    this.failuresOf = db.prepare('SELECT * FROM node_failures WHERE node = ? AND at >= ? ORDER BY at');
  }

  /** Writes an attempt's row: at its start, and at its end. */
  write(a: AttemptRecord): void {
    this.upsert.run({
      ...a,
      nodes: JSON.stringify(a.nodes),
      firstFailure: a.firstFailure ? JSON.stringify(a.firstFailure) : null,
      excluded: JSON.stringify(a.excluded),
    });
  }

  /** Every attempt of a job that started, oldest first. */
  list(jobId: string): AttemptRecord[] {
    return (this.ofJob.all(jobId) as Row[]).map(toAttempt);
  }

  recordFailure(f: NodeFailure): void {
    this.insertFailure.run(f);
  }

  /** A node's failures at or after `since`, oldest first. */
  failuresSince(node: string, since: number): NodeFailure[] {
    return (this.failuresOf.all(node, since) as Row[]).map((r) => ({
      node: r['node'] as string,
      at: r['at'] as number,
      jobId: r['job_id'] as string,
      attempt: r['attempt'] as number,
      reason: r['reason'] as string,
    }));
  }
}

function toAttempt(r: Row): AttemptRecord {
  return {
    jobId: r['job_id'] as string,
    attempt: r['attempt'] as number,
    state: r['state'] as JobState,
    reason: r['reason'] as string,
    nodes: JSON.parse(r['nodes'] as string) as string[],
    startedAt: r['started_at'] as number,
    endedAt: (r['ended_at'] as number | null) ?? null,
    exitCode: (r['exit_code'] as number | null) ?? null,
    firstFailure: r['first_failure'] ? (JSON.parse(r['first_failure'] as string) as AttemptFailure) : null,
    excluded: JSON.parse(r['excluded'] as string) as string[],
    restartDelayMs: (r['restart_delay'] as number | null) ?? null,
  };
}
