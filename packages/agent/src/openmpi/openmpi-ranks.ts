// The ranks of an Open MPI job on this node. Open MPI's orted starts them, not the agent,
// so each planned rank is prepared without being started: the rank directory, launch.json,
// the rank cgroup, and for the program orted runs (`rank-supervisor ompi-rank`) the run
// mode's argv and the rank's environment (0600 files it reads and deletes). When that supervisor writes
// rank.json, the rank is handed to the rank runner (attach: binding check, exit.json,
// liveness) and to the job executor (rank.started, output pump, rank.exit), as any rank.
// A rank that can no longer come (its supervisor failed, the job ends, this node's daemons
// ended) is reported as not started.
//
// Killing is only ever by recorded identity: a rank orted starts after the job was told
// to end is signalled through the rank runner, by the process group it recorded.
import path from 'node:path';
import type { RankLaunch as WireLaunch } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { JobExecutor } from '../jobs/job-executor.js';
import { createRankCgroup, rankCgroupPath, removeCgroup } from '../ranks/cgroup.js';
import { watchRankDir } from '../ranks/dir-watch.js';
import { RankErrorCode, rankError } from '../ranks/errors.js';
import type { IdentityResolver } from '../ranks/identity.js';
import { prepareRank } from '../ranks/preflight.js';
import type { RankRunner } from '../ranks/rank-runner.js';
import { files, readRankRecord } from '../ranks/records.js';
import { readJson, writeJsonAtomic, type ExitRecord, type LaunchRecord } from '../ranks/spool.js';
import { encodeEnv } from '../ranks/caller-env.js';
import { assertSupervisorUsable, type SupervisorBinary } from '../ranks/supervisor-binary.js';
import { supervisorArgv } from '../ranks/supervisor.js';
import { writePrivate } from './ompi-files.js';
import { runArgs } from './supervised-process.js';

export interface PlannedRank {
  rank: number;
  state: 'waiting' | 'attaching' | 'done';
  plan: { cpus: number[]; memNodes: number[]; memBound: boolean };
  wrappers: string[][];
  warnings: string[];
  unwatch?: () => void;
}

/** What of a job its ranks here need to know. */
export interface RankJob {
  readonly jobId: string;
  readonly leaseMs: number;
  /** Why the job is ending on this node, or null. */
  aborted: string | null;
  readonly ranks: Map<number, PlannedRank>;
  /** The submitter's exported environment (job's exportEnv): the ranks' alone, never mpirun's or orted's. */
  readonly exportEnv: Record<string, string>;
}

export interface OpenMpiRanksDeps<J extends RankJob> {
  runner: RankRunner;
  executor: JobExecutor;
  identities: IdentityResolver;
  supervisor: SupervisorBinary;
  baseEnv: Record<string, string>;
  log: Logger;
  /** A rank of the job is done with here (attached, or reported as not started). */
  rankDone: (job: J) => void;
}

export class OpenMpiRanks<J extends RankJob> {
  constructor(private readonly deps: OpenMpiRanksDeps<J>) {}

  /** Everything the rank's supervisor needs, ready before orted may start it; a rank that cannot be is reported as not started. */
  async prepare(job: J, launch: WireLaunch): Promise<void> {
    const { runner, executor, supervisor } = this.deps;
    const { jobId } = job;
    const { rank } = launch;
    try {
      const rl = {
        jobId,
        rank,
        argv: launch.argv,
        env: launch.env,
        inherited: { ...this.deps.baseEnv, ...job.exportEnv },
        cpus: launch.cpus,
        memNodes: launch.memNodes,
        ...(launch.cwd ? { cwd: launch.cwd } : {}),
        ...(launch.user ? { user: launch.user } : {}),
      };
      if (launch.pty)
        throw rankError(
          RankErrorCode.BadLaunch,
          "--pty is not available with --mpi openmpi (orted holds the ranks' stdio)",
        );
      assertSupervisorUsable(supervisor);
      const { identity, cwd, env, inheritedNames, pin, warnings } = await prepareRank(rl, this.deps.identities);
      if (identity.switchUser) {
        throw rankError(
          RankErrorCode.BadUser,
          `--mpi openmpi runs ranks only as the agent's own user (orted's ranks write the spool); not as ${identity.name}`,
        );
      }
      if (!runner.spool.createRankDir(jobId, rank))
        throw rankError(RankErrorCode.Exists, `rank ${rank} of job ${jobId} already has a spool directory`);
      const dir = runner.spool.rankDir(jobId, rank);
      const record: LaunchRecord = {
        argv: launch.argv,
        execArgv: launch.argv,
        cpus: launch.cpus,
        memNodes: launch.memNodes,
        user: launch.user ?? null,
        pty: false,
      };
      writeJsonAtomic(files.launch(dir), record);
      const cgroup = runner.cgroupBase ? createRankCgroup(runner.cgroupBase, jobId, rank) : null;
      const args = runArgs(supervisor, dir, cgroup, cwd, launch.argv, pin.options);
      // what /proc/<pid>/cmdline shows before the program's exec
      const wrappers = [supervisorArgv(args)];
      // what `rank-supervisor ompi-rank` reads (and deletes) to become the rank's supervisor
      writePrivate(path.join(dir, 'ompi-exec'), supervisorArgv(args).join('\0'));
      // what the rank inherits goes beneath Open MPI's own variables, the rest over them (native/ompi-rank.c)
      const [inherited, own] = splitEnv(env, inheritedNames);
      writePrivate(path.join(dir, 'ompi-inherited'), encodeEnv(inherited));
      writePrivate(path.join(dir, 'ompi-env'), encodeEnv(own));
      const planned: PlannedRank = {
        rank,
        state: 'waiting',
        plan: { cpus: launch.cpus, memNodes: launch.memNodes, memBound: pin.memBound },
        wrappers,
        warnings,
      };
      job.ranks.set(rank, planned);
      planned.unwatch = watchRankDir(dir, () => this.check(job, planned));
      this.check(job, planned);
    } catch (err) {
      const e = err as { code?: string; message: string };
      this.deps.log.warn({ jobId, rank, code: e.code, err: e.message }, 'Open MPI rank cannot be prepared');
      job.ranks.set(rank, {
        rank,
        state: 'done',
        plan: { cpus: [], memNodes: [], memBound: false },
        wrappers: [],
        warnings: [],
      });
      executor.notStarted(jobId, rank, { code: e.code ?? 'RANKD_RANK_SPAWN_FAILED', message: e.message });
    }
  }

  /** What orted passes on to the program it starts for each rank: this node's supervisor, and where its ranks are. */
  daemonEnv(jobId: string): Record<string, string> {
    return {
      RANKD_OMPI_JOB_DIR: this.deps.runner.spool.jobDir(jobId),
      RANKD_OMPI_SUPERVISOR: this.deps.supervisor.path,
    };
  }

  /** No rank will come any more (the job is ending, or its daemons here have ended): report those that never started. */
  endWaiting(job: J, why: string): void {
    const { runner, executor } = this.deps;
    for (const r of job.ranks.values()) {
      if (r.state !== 'waiting') continue;
      this.check(job, r); // one last look: it may have just started
      if (r.state !== 'waiting') continue;
      const dir = runner.spool.rankDir(job.jobId, r.rank);
      writeJsonAtomic(files.exit(dir), {
        code: null,
        signal: null,
        failed: { code: RankErrorCode.NotStarted, message: why },
      } satisfies ExitRecord);
      if (runner.cgroupBase) removeCgroup(rankCgroupPath(runner.cgroupBase, job.jobId, r.rank));
      this.done(job, r);
      executor.notStarted(job.jobId, r.rank, { code: RankErrorCode.NotStarted, message: why });
    }
  }

  /** True once every rank of the job here is attached or reported. */
  allDone(job: J): boolean {
    return [...job.ranks.values()].every((r) => r.state === 'done');
  }

  /** Stops watching the job's rank directories (agent shutdown), touching no rank. */
  unwatch(job: J): void {
    for (const r of job.ranks.values()) r.unwatch?.();
  }

  /** Something changed in a waiting rank's directory: its supervisor may have started it, or failed to. */
  private check(job: J, r: PlannedRank): void {
    if (r.state !== 'waiting') return;
    const dir = this.deps.runner.spool.rankDir(job.jobId, r.rank);
    if (readRankRecord(dir)) {
      r.state = 'attaching';
      r.unwatch?.();
      void this.attach(job, r);
      return;
    }
    // the supervisor failed before the fork's exec (bad cwd, …): exit.json without rank.json
    const exit = readJson<ExitRecord>(files.exit(dir));
    if (exit) {
      this.done(job, r);
      const failed = exit.failed ?? {
        code: 'RANKD_RANK_SPAWN_FAILED',
        message: exit.unknown ?? 'the supervisor ended before the rank started',
      };
      this.deps.executor.notStarted(job.jobId, r.rank, failed);
    }
  }

  private async attach(job: J, r: PlannedRank): Promise<void> {
    const { runner, executor } = this.deps;
    try {
      const started = await runner.attach(job.jobId, r.rank, r.plan, r.wrappers, r.warnings);
      executor.attached(job.jobId, job.leaseMs, started);
      // started by orted after this node was told to end the job: it goes at once
      if (job.aborted) runner.signal(job.jobId, r.rank, 'SIGKILL');
    } catch (err) {
      this.deps.log.warn(
        { jobId: job.jobId, rank: r.rank, err: (err as Error).message },
        'cannot track an Open MPI rank',
      );
      executor.notStarted(job.jobId, r.rank, { code: 'RANKD_RANK_SPAWN_FAILED', message: (err as Error).message });
    }
    this.done(job, r);
  }

  private done(job: J, r: PlannedRank): void {
    r.state = 'done';
    r.unwatch?.();
    r.unwatch = undefined;
    this.deps.rankDone(job);
  }
}

/** `env` split into the names in `names` and the others. */
function splitEnv(env: Record<string, string>, names: Set<string>): [Record<string, string>, Record<string, string>] {
  const picked: Record<string, string> = {};
  const rest: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) (names.has(k) ? picked : rest)[k] = v;
  return [picked, rest];
}
