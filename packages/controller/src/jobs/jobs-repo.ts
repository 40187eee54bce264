// Persistence of jobs and their ranks. Every state change is written through, so a
// controller killed at any moment restarts knowing what ran where.
import type { Binding, JobState, JobSubmit, RankMap, RankState } from '@rankd/protocol';
import type { Allocation } from '@rankd/planner';
import type { Demand } from '../schedule/demand.js';
import type { Db } from '../store/database.js';
import { AttemptsRepo, type AttemptRecord, type NodeFailure } from './attempts-repo.js';
import { pendingRanks, type JobRecord, type RankRecord } from './job-records.js';
import { rankMapJson } from './rank-map-json.js';

type Row = Record<string, unknown>;

/** What a listing asks for; every filter given must hold. */
export interface JobFilter {
  limit: number;
  owner?: string;
  /** Any of these states. */
  states?: readonly JobState[];
  /** Created at or after this (epoch ms). */
  since?: number;
  /** Ids that start with this ([A-Za-z0-9_-] only: the route's schema holds it to that). */
  idPrefix?: string;
}

export class JobsRepo {
  private readonly insertJob;
  private readonly insertPlan;
  private readonly updateJobStmt;
  private readonly startJobStmt;
  private readonly updateRankStmt;
  private readonly updateBytesStmt;
  private readonly byId;
  private readonly byKey;
  private readonly ranksOf;
  private readonly active;
  private readonly dropPlan;
  private readonly db: Db;
  readonly attempts: AttemptsRepo;
  /** A listing's statement per combination of filters given: at most 2^4 of them. */
  private readonly listings = new Map<string, ReturnType<Db['prepare']>>();
  readonly create: (job: JobRecord) => void;
  /**
   * A queued job starts: its state, rank map and allocation in one transaction. Its ranks get
   * rows when they first change (updateRank); until then the plan says each is pending, and
   * ranks() says so too: a 2,000 × 8 job writes no 16,000 rows that its ranks' first reports
   * would rewrite at once.
   */
  readonly start: (job: JobRecord, attempt: AttemptRecord) => void;
  /**
   * A failed attempt ended and the job goes back to the queue for its next one: the
   * attempt's end, the nodes that failed it, and the job's new attempt, exclusions and
   * restart time, in one transaction.
   */
  readonly restart: (job: JobRecord, ended: AttemptRecord, failures: NodeFailure[]) => void;
  /** The job ends with its last attempt: the attempt's end, the nodes that failed it, and the job's end, at once. */
  readonly end: (job: JobRecord, ended: AttemptRecord, failures: NodeFailure[]) => void;

  constructor(db: Db) {
    this.insertJob =
      db.prepare(`INSERT INTO jobs (id, name, idempotency_key, owner, state, reason, submit, exit_code, created_at, started_at, ended_at, priority, demand)
      VALUES (@id, @name, @idempotencyKey, @owner, @state, @reason, @submit, @exitCode, @createdAt, @startedAt, @endedAt, @priority, @demand)`);
    this.insertPlan = db.prepare('INSERT INTO job_plans (job_id, rank_map, allocation) VALUES (?, ?, ?)');
    this.updateJobStmt = db.prepare(
      `UPDATE jobs SET state = @state, reason = @reason, exit_code = @exitCode, started_at = @startedAt,
        ended_at = @endedAt, attempt = @attempt, excluded = @excluded, restart_at = @restartAt WHERE id = @id`,
    );
    // positional, not named: written twice per rank, and binding by name costs a third more
    this.updateRankStmt =
      db.prepare(`INSERT INTO ranks (job_id, attempt, rank, node, state, pid, started_at, ended_at, exit_code, signal, binding, error, warnings, stdout_bytes, stderr_bytes)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (job_id, attempt, rank) DO UPDATE SET state = excluded.state, pid = excluded.pid, started_at = excluded.started_at, ended_at = excluded.ended_at,
        exit_code = excluded.exit_code, signal = excluded.signal, binding = excluded.binding, error = excluded.error, warnings = excluded.warnings,
        stdout_bytes = excluded.stdout_bytes, stderr_bytes = excluded.stderr_bytes`);
    this.startJobStmt = db.prepare('UPDATE jobs SET state = ?, reason = ? WHERE id = ?');
    this.updateBytesStmt = db.prepare(
      'UPDATE ranks SET stdout_bytes = ?, stderr_bytes = ? WHERE job_id = ? AND attempt = ? AND rank = ?',
    );
    this.byId = db.prepare(`${SELECT_JOBS} WHERE id = ?`);
    this.byKey = db.prepare(`${SELECT_JOBS} WHERE idempotency_key = ?`);
    this.ranksOf = db.prepare('SELECT * FROM ranks WHERE job_id = ? AND attempt = ? ORDER BY rank');
    this.dropPlan = db.prepare('DELETE FROM job_plans WHERE job_id = ?');
    this.attempts = new AttemptsRepo(db);
    this.db = db;
    this.active = db.prepare(
      `${SELECT_JOBS} WHERE state IN ('queued', 'pending', 'starting', 'running') ORDER BY created_at`,
    );
    this.create = db.transaction((job: JobRecord) => {
      this.insertJob.run(jobParams(job));
      if (job.rankMap)
        this.insertPlan.run(job.id, rankMapJson(job.rankMap), job.allocation ? JSON.stringify(job.allocation) : null);
    });
    this.start = db.transaction((job: JobRecord, attempt: AttemptRecord) => {
      this.startJobStmt.run(job.state, job.reason, job.id);
      this.insertPlan.run(job.id, rankMapJson(job.rankMap!), JSON.stringify(job.allocation));
      this.attempts.write(attempt);
    });
    this.restart = db.transaction((job: JobRecord, ended: AttemptRecord, failures: NodeFailure[]) => {
      this.attempts.write(ended);
      for (const f of failures) this.attempts.recordFailure(f);
      this.dropPlan.run(job.id);
      this.updateJob(job);
    });
    this.end = db.transaction((job: JobRecord, ended: AttemptRecord, failures: NodeFailure[]) => {
      this.attempts.write(ended);
      for (const f of failures) this.attempts.recordFailure(f);
      this.updateJob(job);
    });
  }

  updateJob(job: JobRecord): void {
    this.updateJobStmt.run({
      id: job.id,
      state: job.state,
      reason: job.reason,
      exitCode: job.exitCode,
      startedAt: job.startedAt,
      endedAt: job.endedAt,
      attempt: job.attempt,
      excluded: JSON.stringify(job.excluded),
      restartAt: job.restartAt,
    });
  }

  /** Writes a rank's row, the first time it changes included (a pending rank has none yet). */
  updateRank(r: RankRecord): void {
    const binding = r.binding ? JSON.stringify(r.binding) : null;
    this.updateRankStmt.run(
      r.jobId,
      r.attempt,
      r.rank,
      r.node,
      r.state,
      r.pid,
      r.startedAt,
      r.endedAt,
      r.exitCode,
      r.signal,
      binding,
      r.error,
      JSON.stringify(r.warnings),
      r.stdoutBytes,
      r.stderrBytes,
    );
  }

  /** The log index only (of ranks that have rows: output comes after a rank's start); called in batches while output flows. */
  updateBytes(r: RankRecord): void {
    this.updateBytesStmt.run(r.stdoutBytes, r.stderrBytes, r.jobId, r.attempt, r.rank);
  }

  get(id: string): JobRecord | null {
    const row = this.byId.get(id) as Row | undefined;
    return row ? toJob(row) : null;
  }

  getByKey(key: string): JobRecord | null {
    const row = this.byKey.get(key) as Row | undefined;
    return row ? toJob(row) : null;
  }

  /**
   * Every rank of a job's current attempt (or of `attempt`): its row, or, for a rank of the
   * current attempt that never changed, pending on the plan.
   */
  ranks(job: Pick<JobRecord, 'id' | 'rankMap' | 'attempt'>, attempt = job.attempt): RankRecord[] {
    const stored = (this.ranksOf.all(job.id, attempt) as Row[]).map(toRank);
    if (!job.rankMap || attempt !== job.attempt) return stored;
    const ranks = pendingRanks(job.id, attempt, job.rankMap);
    for (const r of stored) ranks[r.rank] = r;
    return ranks;
  }

  /** The newest jobs that pass the filter, newest first. */
  list(filter: JobFilter): JobRecord[] {
    const { states, ...rest } = filter;
    if (states === undefined) return this.listRows(rest).map(toJob);
    // each state's newest through the index on (state, created_at), then merged: one query
    // over several states reads every job of them and sorts, a cost that grows with history
    const rows = states.flatMap((state) => this.listRows({ ...rest, state }));
    rows.sort(
      (a, b) =>
        (b['created_at'] as number) - (a['created_at'] as number) ||
        ((b['id'] as string) < (a['id'] as string) ? -1 : 1),
    );
    return rows.slice(0, filter.limit).map(toJob);
  }

  private listRows(filter: Omit<JobFilter, 'states'> & { state?: JobState }): Row[] {
    const { where, params } = listingWhere(filter);
    let stmt = this.listings.get(where);
    if (!stmt)
      this.listings.set(
        where,
        (stmt = this.db.prepare(`${SELECT_JOBS} ${where} ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT @limit`)),
      );
    return stmt.all({ ...params, limit: filter.limit }) as Row[];
  }

  listActive(): JobRecord[] {
    return (this.active.all() as Row[]).map(toJob);
  }
}

/** A job row with its plan, when it has one (queued jobs have none yet). */
const SELECT_JOBS =
  'SELECT jobs.*, job_plans.rank_map, job_plans.allocation FROM jobs LEFT JOIN job_plans ON job_plans.job_id = jobs.id';

/** The WHERE clause of a listing (the same text for the same filters given) and its parameters. */
function listingWhere(filter: Omit<JobFilter, 'states'> & { state?: JobState }): {
  where: string;
  params: Record<string, unknown>;
} {
  const terms: string[] = [];
  const params: Record<string, unknown> = {};
  if (filter.owner !== undefined) {
    terms.push('jobs.owner = @owner');
    params['owner'] = filter.owner;
  }
  if (filter.state !== undefined) {
    terms.push('jobs.state = @state');
    params['state'] = filter.state;
  }
  if (filter.since !== undefined) {
    terms.push('jobs.created_at >= @since');
    params['since'] = filter.since;
  }
  if (filter.idPrefix !== undefined) {
    // a range on the primary key, not LIKE (whose `_` is a wildcard): '~' sorts after every id character
    terms.push('jobs.id >= @idPrefix AND jobs.id < @idPrefixEnd');
    params['idPrefix'] = filter.idPrefix;
    params['idPrefixEnd'] = `${filter.idPrefix}~`;
  }
  return { where: terms.length > 0 ? `WHERE ${terms.join(' AND ')}` : '', params };
}

function jobParams(job: JobRecord) {
  const { rankMap: _plan, allocation: _held, attempt: _a, excluded: _x, restartAt: _r, ...row } = job;
  return { ...row, submit: JSON.stringify(job.submit), demand: job.demand ? JSON.stringify(job.demand) : null };
}

function toJob(r: Row): JobRecord {
  return {
    id: r['id'] as string,
    name: (r['name'] as string | null) ?? null,
    idempotencyKey: (r['idempotency_key'] as string | null) ?? null,
    owner: (r['owner'] as string | null) ?? null,
    state: r['state'] as JobState,
    reason: r['reason'] as string,
    submit: JSON.parse(r['submit'] as string) as JobSubmit,
    rankMap: r['rank_map'] ? (JSON.parse(r['rank_map'] as string) as RankMap) : null,
    priority: (r['priority'] as number | null) ?? 0,
    demand: r['demand'] ? (JSON.parse(r['demand'] as string) as Demand) : null,
    allocation: r['allocation'] ? (JSON.parse(r['allocation'] as string) as Allocation) : null,
    exitCode: (r['exit_code'] as number | null) ?? null,
    createdAt: r['created_at'] as number,
    startedAt: (r['started_at'] as number | null) ?? null,
    endedAt: (r['ended_at'] as number | null) ?? null,
    attempt: (r['attempt'] as number | null) ?? 0,
    excluded: JSON.parse((r['excluded'] as string | null) ?? '[]') as string[],
    restartAt: (r['restart_at'] as number | null) ?? null,
  };
}

function toRank(r: Row): RankRecord {
  return {
    jobId: r['job_id'] as string,
    attempt: r['attempt'] as number,
    rank: r['rank'] as number,
    node: r['node'] as string,
    state: r['state'] as RankState,
    pid: (r['pid'] as number | null) ?? null,
    startedAt: (r['started_at'] as number | null) ?? null,
    endedAt: (r['ended_at'] as number | null) ?? null,
    exitCode: (r['exit_code'] as number | null) ?? null,
    signal: (r['signal'] as string | null) ?? null,
    binding: r['binding'] ? (JSON.parse(r['binding'] as string) as Binding) : null,
    error: (r['error'] as string | null) ?? null,
    warnings: JSON.parse(r['warnings'] as string) as string[],
    stdoutBytes: r['stdout_bytes'] as number,
    stderrBytes: r['stderr_bytes'] as number,
  };
}
