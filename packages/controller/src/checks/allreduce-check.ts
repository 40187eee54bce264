// `rankd check allreduce`: a collective sweep through rankd's own launch path. The sweep is
// a job, submitted for the caller as `rankd run` would submit it (placed, pinned, with the
// planner's transport environment, as the caller's Unix user); the check waits for it to
// end, reads what rank 0 printed from the log store, and stores the result beside the net
// checks. The job stays in `rankd jobs` with its rank map and logs.
import { randomBytes } from 'node:crypto';
import {
  CheckErrorCode,
  ErrorCode,
  RankdError,
  type AllreduceCheckRequest,
  type AllreduceCheckResult,
  type JobView,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { JobManager } from '../jobs/job-manager.js';
import { attemptId } from '../jobs/job-records.js';
import type { EventsRepo } from '../store/events-repo.js';
import type { ChecksRepo } from './checks-repo.js';
import { allreduceJob, sweepSizes } from './allreduce-job.js';
import { transportEnv } from './allreduce-env.js';
import { parseSweepOutput, type Implementation, type SweepOutput } from './allreduce-output.js';

/** Rank 0's output read back: a sweep prints a few KiB; nccl-tests lists every rank first. */
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;
/** Of each other rank, the launcher's first line only. */
const FIRST_LINE_BYTES = 1024;

export interface AllreduceOptions {
  /** The rankd user who asked. */
  by: string | null;
  /** The caller's Unix user: the job runs as it; undefined runs it as a job that names none. */
  user: string | undefined;
  /** Called once the job is submitted (the audit entry names it). */
  submitted?: (jobId: string) => void;
}

export class AllreduceCheck {
  constructor(
    private readonly deps: {
      jobs: JobManager;
      repo: ChecksRepo;
      events: EventsRepo;
      log: Logger;
    },
  ) {}

  async run(req: AllreduceCheckRequest, opts: AllreduceOptions): Promise<AllreduceCheckResult> {
    const { jobs } = this.deps;
    const sizes = sweepSizes(req);
    const submit = allreduceJob(req, sizes, opts.user);
    const startedAt = Date.now();
    let view: JobView;
    try {
      ({ view } = jobs.submit(submit, opts.by));
    } catch (err) {
      if (err instanceof RankdError && err.code === ErrorCode.WouldWait)
        throw new RankdError(
          CheckErrorCode.WouldWait,
          err.message.replace(/^--immediate: the job/, 'the sweep') + '; a check runs now or not at all',
        );
      throw err;
    }
    opts.submitted?.(view.id);
    await this.ended(view.id);
    const result = this.result(jobs.view(view.id)!, startedAt, opts.by);
    this.deps.repo.save(result, result.nodes.length);
    this.deps.events.append('check.allreduce', result.id, {
      job: result.jobId,
      ranks: result.ranks,
      rows: result.rows.length,
      wrong: result.wrong,
      flagged: result.flagged,
      by: opts.by,
    });
    this.deps.log.info({ check: result.id, job: result.jobId, wrong: result.wrong }, 'allreduce check finished');
    return result;
  }

  private ended(id: string): Promise<void> {
    const { jobs } = this.deps;
    return new Promise((resolve) => {
      const onEnded = (ended: string) => {
        if (ended !== id) return;
        jobs.off('ended', onEnded);
        resolve();
      };
      jobs.on('ended', onEnded);
      // it may have ended before the listener was there (a start refused at once)
      if (jobs.isEnded(id)) onEnded(id);
    });
  }

  private result(job: JobView, startedAt: number, by: string | null): AllreduceCheckResult {
    const nodes = job.rankMap?.nodes.map((n) => n.name) ?? [];
    const ranks = job.ranks.length;
    const output = parseSweepOutput(this.read(job, 0, MAX_OUTPUT_BYTES));
    const wrong = output.rows.reduce((sum, r) => sum + r.wrong, 0);
    const found = this.outputProblems(job, output, ranks);
    if (wrong > 0) found.push(`${wrong} reduced elements were wrong: the fabric or the MPI library corrupts data`);
    const problems = [...this.jobProblems(job, output), ...found];
    // a cancelled sweep says nothing against its nodes; a failed one, or one that found anything, does
    const failed = job.state !== 'succeeded' && job.state !== 'cancelled';
    return {
      id: checkId(),
      kind: 'allreduce',
      startedAt,
      endedAt: Date.now(),
      by,
      pattern: nodes.join(','),
      jobId: job.id,
      ranks,
      nodes,
      implementation: output.implementation,
      env: transportEnv(job.rankMap?.ranks[0]?.env ?? {}),
      rows: output.rows,
      wrong,
      flagged: failed || found.length > 0 ? nodes : [],
      message: problems.length > 0 ? problems.join('; ') : null,
    };
  }

  /** Why the job did not succeed, with what that means for its rows. */
  private jobProblems(job: JobView, output: SweepOutput): string[] {
    if (job.state === 'succeeded') return [];
    const head = `the sweep's job ${job.id} ${job.state}: ${job.reason}`;
    if (job.state === 'timed-out' && output.complete && output.implementation === 'rankd-mpi')
      return [
        `${head}; rank 0 had printed every size, so the ranks hung on their way out ` +
          '(MPICH 4.0 over UCX can hang in MPI_Finalize when ranks outnumber CPUs: docs/mpi.md, Limits)',
      ];
    return [head];
  }

  /** What the output itself says is wrong: too few sizes, a world of the wrong size, mixed programs. */
  private outputProblems(job: JobView, output: SweepOutput, ranks: number): string[] {
    const problems = output.problems.map((p) => `rank 0 printed ${p}`);
    if (job.state === 'succeeded' && output.rows.length === 0) problems.push('rank 0 printed no result row');
    if (output.rows.length > 0 && output.worldSize !== ranks)
      problems.push(
        `rank 0's program ran in a world of ${output.worldSize} rank(s), the job has ${ranks}: it did not join ` +
          "rankd's PMI-1 wire-up (nccl-tests built without MPI, or with an MPI other than MPICH)",
      );
    const mixed = this.programsByNode(job);
    if (mixed.size > 1)
      problems.push(
        'the nodes ran different programs (' +
          [...mixed].map(([impl, nodes]) => `${impl} on ${[...nodes].join(', ')}`).join('; ') +
          "): install nccl-tests' all_reduce_perf on every node of the sweep or on none",
      );
    return problems;
  }

  /** Which program each rank's launcher said it ran, by node. */
  private programsByNode(job: JobView): Map<Implementation | 'nothing', Set<string>> {
    const by = new Map<Implementation | 'nothing', Set<string>>();
    for (const r of job.ranks) {
      const impl = parseSweepOutput(this.read(job, r.rank, FIRST_LINE_BYTES).split('\n')[0] ?? '').implementation;
      // a rank that printed nothing (its node failed the build) is told by the job's reason
      if (impl === null) continue;
      let nodes = by.get(impl);
      if (!nodes) by.set(impl, (nodes = new Set()));
      nodes.add(r.node);
    }
    return by;
  }

  private read(job: JobView, rank: number, maxBytes: number): string {
    return this.deps.jobs.logs.read(attemptId(job.id, job.attempt), rank, 'stdout', 0, maxBytes).toString('utf8');
  }
}

/** As the net check's ids: c-<base36 ms>-<6 hex>, sortable by time. */
function checkId(): string {
  return `c-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}
