// The node side of running ranks: start them pinned under their supervisors, verify the
// binding, signal and abort them by the process groups and cgroups recorded at start,
// report each exit exactly as recorded, and pick all of it up again after an agent
// restart. The wire protocol is not here: the agent maps its messages onto these calls.
//
// Killing is only ever by recorded identity: a process group (pgid = the rank's pid,
// checked against its live supervisor) or the rank's own cgroup. Never by name or pattern.
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import type { Socket } from 'node:net';
import os from 'node:os';
import { verifyBinding } from './binding.js';
import { createRankCgroup, detectCgroupBase, killCgroup, removeCgroup, type CgroupMode } from './cgroup.js';
import { watchRankDir } from './dir-watch.js';
import { RankErrorCode, rankError } from './errors.js';
import { IdentityResolver } from './identity.js';
import { ensureMemlockUnlimited } from './memlock.js';
import { RankOutput } from './output.js';
import { prepareRank } from './preflight.js';
import { isAlive, readCmdline, signalGroup } from './proc.js';
import { endGroup, startPtyRank } from './pty-rank.js';
import {
  assertJobId,
  assertRank,
  validateLaunch,
  type RankExit,
  type RankInfo,
  type RankLaunch,
  type StartedRank,
} from './rank-spec.js';
import { files, readExit, readLaunchRecord, readRankRecord, recordUnknown, startedAt } from './records.js';
import { Spool, writeJsonAtomic, type LaunchRecord, type RankRecord } from './spool.js';
import { startSupervised, supervisorArgv, userSpecOf, type SupervisorArgs } from './supervisor.js';
import { assertSupervisorUsable, findSupervisor, type SupervisorBinary } from './supervisor-binary.js';

export interface RankRunnerOptions {
  /** Where ranks' records and output live; must survive agent restarts (not a tmpfs the unit owns). */
  spoolDir: string;
  /** Let ranks run as root (uid 0). Off by default. */
  allowRoot?: boolean;
  /** Ranks run as the agent's own user only (an ephemeral agent). */
  ownUserOnly?: boolean;
  cgroup?: CgroupMode;
  /** The rank supervisor binary; the build's (dist/native/rank-supervisor) by default. */
  supervisorPath?: string;
  /** How often adopted ranks' supervisors are checked for life. */
  livenessPollMs?: number;
  /** How long to wait for a rank to get past its wrappers before giving up on its binding. */
  bindingTimeoutMs?: number;
}

interface TrackedRank {
  jobId: string;
  rank: number;
  dir: string;
  record: RankRecord;
  launch: LaunchRecord | undefined;
  startedAt: string | null;
  exit?: RankExit;
  exited: Promise<RankExit>;
  settle: (exit: RankExit) => void;
  finishing?: Promise<void>;
  child?: ChildProcess;
  unwatch?: () => void;
}

type Events = { exit: [RankExit] };

export class RankRunner extends EventEmitter<Events> {
  readonly spool: Spool;
  /** Offset reads of the ranks' output in this runner's spool. */
  readonly output: RankOutput;
  /** Where rank cgroups go, or null when ranks are tracked by process group only. */
  readonly cgroupBase: string | null;
  /** What starts every rank; without a usable one, every start is refused (supervisor-binary.ts). */
  readonly supervisor: SupervisorBinary;
  private readonly identities: IdentityResolver;
  private readonly ranks = new Map<string, TrackedRank>();
  private readonly starting = new Map<string, Promise<unknown>>();
  private readonly aborted = new Set<string>();
  private liveness: NodeJS.Timeout | null = null;

  constructor(private readonly opts: RankRunnerOptions) {
    super();
    this.spool = new Spool(opts.spoolDir);
    this.output = new RankOutput(this.spool);
    this.identities = new IdentityResolver({
      allowRoot: opts.allowRoot ?? false,
      ownUserOnly: opts.ownUserOnly ?? false,
    });
    this.cgroupBase = detectCgroupBase(opts.cgroup ?? 'auto');
    this.supervisor = findSupervisor(opts.supervisorPath);
    // once per process and off the first rank's start path
    void ensureMemlockUnlimited();
  }

  /** Starts one rank; resolves once it runs its program (or has already ended), with its binding read back. */
  async start(launch: RankLaunch): Promise<StartedRank> {
    validateLaunch(launch);
    assertSupervisorUsable(this.supervisor);
    const key = keyOf(launch.jobId, launch.rank);
    if (this.aborted.has(launch.jobId))
      throw rankError(RankErrorCode.JobAborted, `job ${launch.jobId} is being aborted on this node`);
    if (this.ranks.has(key) || this.starting.has(key))
      throw rankError(RankErrorCode.Exists, `rank ${launch.rank} of job ${launch.jobId} already exists on this node`);
    const pending = this.doStart(launch);
    this.starting.set(key, pending);
    try {
      return await pending;
    } finally {
      this.starting.delete(key);
    }
  }

  private async doStart(launch: RankLaunch): Promise<StartedRank> {
    const { jobId, rank } = launch;
    const { identity, cwd, env, pin, warnings } = await prepareRank(launch, this.identities);
    if (!this.spool.createRankDir(jobId, rank))
      throw rankError(RankErrorCode.Exists, `rank ${rank} of job ${jobId} already has a spool directory`);
    const dir = this.spool.rankDir(jobId, rank);
    const launchRecord: LaunchRecord = {
      argv: launch.argv,
      execArgv: launch.argv,
      cpus: launch.cpus,
      memNodes: launch.memNodes,
      user: launch.user ?? null,
      pty: launch.pty === true,
    };
    let cgroup: string | null = null;
    let passed: Socket | undefined;
    let input: Socket | undefined;
    try {
      writeJsonAtomic(files.launch(dir), launchRecord);
      cgroup = this.cgroupBase ? createRankCgroup(this.cgroupBase, jobId, rank) : null;
      const args: SupervisorArgs = {
        supervisor: this.supervisor,
        mode: launch.pty ? 'exec' : 'run',
        options: pin.options,
        rankDir: dir,
        cgroup,
        userSpec: userSpecOf(identity),
        cwd,
        argv: launch.argv,
      };
      // what /proc/<pid>/cmdline shows before the program's exec
      const wrappers = [supervisorArgv(args)];
      if (launch.pty) wrappers.push(AGENT_CMDLINE);

      const started: {
        pid: number;
        ended: Promise<void>;
        child?: ChildProcess;
        passedSocket?: Socket;
        stdinSocket?: Socket;
      } = launch.pty
        ? await startPtyRank(args, env, launch.cols, launch.rows)
        : await startSupervised(args, env, launch.passSocket === true, launch.stdin === true);
      passed = started.passedSocket;
      input = started.stdinSocket;
      const t = this.track(jobId, rank, dir, launchRecord, readRankRecord(dir));
      t.child = started.child;
      const binding = await verifyBinding(
        started.pid,
        { cpus: launch.cpus, memNodes: launch.memNodes, memBound: pin.memBound },
        {
          wrapperCmdlines: wrappers,
          timeoutMs: this.opts.bindingTimeoutMs,
        },
      );
      // hooked only now, and run after the caller has seen this result: a rank's exit event
      // never comes before its start
      void started.ended.then(() => setImmediate(() => void this.finish(t)));
      return {
        jobId,
        rank,
        pid: started.pid,
        pgid: started.pid,
        supervisorPid: t.record.supervisorPid,
        startedAt: t.startedAt ?? new Date().toISOString(),
        binding,
        warnings,
        cgroup,
        execArgv: launch.argv,
        ...(passed ? { passedSocket: passed } : {}),
        ...(input ? { stdin: input } : {}),
      };
    } catch (err) {
      passed?.destroy();
      input?.destroy();
      // the start failed: leave no trace, so that the controller may retry the rank here;
      // if the supervisor died after the fork, its rank is ended first
      if (!this.ranks.has(keyOf(jobId, rank))) {
        const record = readRankRecord(dir);
        if (record) await endGroup(record.pgid, cgroup);
        else if (cgroup) removeCgroup(cgroup);
        fs.rmSync(dir, { recursive: true, force: true });
      }
      throw err;
    }
  }

  private track(
    jobId: string,
    rank: number,
    dir: string,
    launch: LaunchRecord | undefined,
    record: RankRecord | undefined,
  ): TrackedRank {
    if (!record) throw rankError(RankErrorCode.SpawnFailed, `${dir}/rank.json is missing after the start`);
    let settle!: (e: RankExit) => void;
    const exited = new Promise<RankExit>((r) => (settle = r));
    const t: TrackedRank = { jobId, rank, dir, record, launch, startedAt: startedAt(dir), exited, settle };
    this.ranks.set(keyOf(jobId, rank), t);
    return t;
  }

  /**
   * Called whenever the rank may have ended. Reads exit.json; when the supervisor is gone
   * without one, ends what is left of the rank and records `unknown`, never a success.
   */
  private finish(t: TrackedRank, emit = true): Promise<void> {
    if (t.finishing) return t.finishing;
    // a spurious call (a directory event, a poll) while the supervisor still runs the rank
    if (!fs.existsSync(files.exit(t.dir)) && !t.record.pty && this.supervisorAlive(t)) return Promise.resolve();
    t.finishing = (async () => {
      let exit = readExit(t.jobId, t.rank, t.dir);
      if (!exit) {
        await endGroup(t.record.pgid, t.record.cgroup);
        // the supervisor may have written it while we were ending the group
        exit =
          readExit(t.jobId, t.rank, t.dir) ??
          recordUnknown(
            t.jobId,
            t.rank,
            t.dir,
            t.record.pty
              ? 'the agent that held the terminal of this PTY rank is gone'
              : 'the supervisor ended without recording an exit status',
          );
      }
      t.exit = exit;
      t.unwatch?.();
      t.child?.removeAllListeners('exit');
      t.child = undefined;
      if (emit) this.emit('exit', exit);
      t.settle(exit);
    })();
    return t.finishing;
  }

  private supervisorAlive(t: TrackedRank): boolean {
    return t.record.supervisorPid !== null && isAlive(t.record.supervisorPid, t.record.supervisorStartTicks);
  }

  /** Sends `signal` to the process group of one rank or of all ranks of a job; returns how many were signalled. */
  signal(jobId: string, rank: number | 'all', signal: NodeJS.Signals): number {
    assertJobId(jobId);
    if (rank !== 'all') assertRank(rank);
    if (!(signal in os.constants.signals)) throw rankError(RankErrorCode.BadLaunch, `unknown signal ${signal}`);
    if (rank !== 'all' && !this.ranks.has(keyOf(jobId, rank)))
      throw rankError(RankErrorCode.Unknown, `rank ${rank} of job ${jobId} is not known here`);
    let n = 0;
    for (const t of this.jobRanks(jobId)) {
      if (rank !== 'all' && t.rank !== rank) continue;
      if (this.signalRank(t, signal)) n++;
    }
    return n;
  }

  private signalRank(t: TrackedRank, signal: NodeJS.Signals): boolean {
    if (t.exit) return false;
    // while the supervisor lives the pgid is the rank's (the supervisor has not written
    // exit.json, so it is still reaping or cleaning that very group); a PTY rank's leader
    // is the agent's own child
    if (!t.record.pty && !this.supervisorAlive(t)) return false;
    return signalGroup(t.record.pgid, signal);
  }

  /**
   * Ends every rank of the job on this node: SIGTERM to each rank's process group, up to
   * `graceMs` for them to go, then SIGKILL to the groups and cgroup.kill. Resolves with
   * their exits once every rank is gone. Also for a lease timer: it needs no controller.
   * No new rank of the job may start here until forget(jobId).
   */
  async abortJob(jobId: string, graceMs: number): Promise<RankExit[]> {
    assertJobId(jobId);
    this.aborted.add(jobId);
    await Promise.allSettled([...this.starting].filter(([k]) => k.startsWith(`${jobId}/`)).map(([, p]) => p));
    const ranks = this.jobRanks(jobId);
    for (const t of ranks) this.signalRank(t, 'SIGTERM');
    const all = Promise.all(ranks.map((t) => t.exited));
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'grace'>((r) => (timer = setTimeout(() => r('grace'), Math.max(0, graceMs))));
    const first = await Promise.race([all, graceOver]);
    clearTimeout(timer);
    if (first === 'grace') {
      for (const t of ranks) {
        if (t.exit) continue;
        this.signalRank(t, 'SIGKILL');
        if (t.record.cgroup) killCgroup(t.record.cgroup);
      }
    }
    return all;
  }

  /**
   * After an agent restart: finds every rank in the spool. Live ones are watched again
   * (their exit event will come); ended ones are returned with their exit, including those
   * that ended while no agent was there; a rank whose supervisor vanished without a record
   * is ended here and returned as unknown. Exits are reported at least once: one that
   * happens while adopt() runs may be both returned and emitted, and the controller
   * de-duplicates by (jobId, rank), as it must anyway after a reconnect.
   */
  async adopt(): Promise<RankInfo[]> {
    const found: TrackedRank[] = [];
    for (const jobId of this.spool.jobs()) {
      for (const rank of this.spool.ranks(jobId)) {
        if (this.ranks.has(keyOf(jobId, rank)) || this.starting.has(keyOf(jobId, rank))) continue;
        const dir = this.spool.rankDir(jobId, rank);
        let record = readRankRecord(dir);
        if (!record) {
          // the agent died between creating the directory and the supervisor's first
          // record: nothing is known to run; record that, so the controller hears of it
          if (!readExit(jobId, rank, dir))
            recordUnknown(jobId, rank, dir, 'the agent stopped while starting this rank');
          record = NO_PROCESS;
        }
        const t = this.track(jobId, rank, dir, readLaunchRecord(dir), record);
        found.push(t);
        const exit = readExit(jobId, rank, dir);
        if (exit) {
          t.exit = exit;
          t.settle(exit);
          continue;
        }
        if (t.record.pty || !this.supervisorAlive(t)) {
          // ended here and now: reported in the result, not as an event
          await this.finish(t, false);
          continue;
        }
        t.unwatch = watchRankDir(dir, () => {
          if (fs.existsSync(files.exit(dir))) void this.finish(t);
        });
      }
    }
    this.startLivenessPoll();
    return found.map((t) => this.info(t));
  }

  /**
   * A rank whose supervisor was started by someone else from a directory this node
   * prepared (Open MPI's orted runs ranks of `--mpi openmpi` jobs: openmpi/). Once its
   * rank.json exists it is tracked as an adopted rank is (exit.json watch, liveness poll),
   * after its binding is read back as for any start. Its exit event comes after this resolves.
   */
  async attach(
    jobId: string,
    rank: number,
    plan: Parameters<typeof verifyBinding>[1],
    wrapperCmdlines: string[][],
    warnings: string[],
  ): Promise<StartedRank> {
    const key = keyOf(jobId, rank);
    if (this.ranks.has(key) || this.starting.has(key))
      throw rankError(RankErrorCode.Exists, `rank ${rank} of job ${jobId} is already tracked on this node`);
    const dir = this.spool.rankDir(jobId, rank);
    const launch = readLaunchRecord(dir);
    const t = this.track(jobId, rank, dir, launch, readRankRecord(dir));
    const binding = await verifyBinding(t.record.pid, plan, { wrapperCmdlines, timeoutMs: this.opts.bindingTimeoutMs });
    setImmediate(() => {
      t.unwatch = watchRankDir(dir, () => {
        if (fs.existsSync(files.exit(dir))) void this.finish(t);
      });
      this.startLivenessPoll();
      if (fs.existsSync(files.exit(dir)) || !this.supervisorAlive(t)) void this.finish(t);
    });
    return {
      jobId,
      rank,
      pid: t.record.pid,
      pgid: t.record.pgid,
      supervisorPid: t.record.supervisorPid,
      startedAt: t.startedAt ?? new Date().toISOString(),
      binding,
      warnings,
      cgroup: t.record.cgroup,
      execArgv: launch?.execArgv ?? [],
    };
  }

  private startLivenessPoll(): void {
    if (this.liveness) return;
    this.liveness = setInterval(() => {
      let watching = false;
      for (const t of this.ranks.values()) {
        if (t.exit || t.child || t.record.pty) continue;
        watching = true;
        if (!this.supervisorAlive(t)) void this.finish(t);
      }
      if (!watching && this.liveness) {
        clearInterval(this.liveness);
        this.liveness = null;
      }
    }, this.opts.livenessPollMs ?? 1000);
  }

  list(): RankInfo[] {
    return [...this.ranks.values()].map((t) => this.info(t));
  }

  /** The exit of a rank once it has ended (resolves at once for an ended one). */
  exited(jobId: string, rank: number): Promise<RankExit> {
    const t = this.ranks.get(keyOf(jobId, rank));
    if (!t) return Promise.reject(rankError(RankErrorCode.Unknown, `rank ${rank} of job ${jobId} is not known here`));
    return t.exited;
  }

  /** Deletes a job's spool and leftover cgroups once the controller has stored everything. */
  forget(jobId: string): void {
    assertJobId(jobId);
    const ranks = this.jobRanks(jobId);
    const live = ranks.filter((t) => !t.exit).map((t) => t.rank);
    if (live.length > 0 || [...this.starting.keys()].some((k) => k.startsWith(`${jobId}/`))) {
      throw rankError(
        RankErrorCode.JobRunning,
        `job ${jobId} still has live ranks here: ${live.join(',') || 'starting'}`,
      );
    }
    for (const t of ranks) {
      t.unwatch?.();
      if (t.record.cgroup) removeCgroup(t.record.cgroup);
      this.ranks.delete(keyOf(jobId, t.rank));
    }
    this.output.close(jobId);
    this.spool.removeJob(jobId);
    this.aborted.delete(jobId);
  }

  /** Stops watching without touching any rank: for an agent that is shutting down or handing over. */
  close(): void {
    this.output.closeAll();
    if (this.liveness) clearInterval(this.liveness);
    this.liveness = null;
    for (const t of this.ranks.values()) {
      t.unwatch?.();
      t.child?.removeAllListeners('exit');
      t.child?.unref();
    }
  }

  private jobRanks(jobId: string): TrackedRank[] {
    return [...this.ranks.values()].filter((t) => t.jobId === jobId).sort((a, b) => a.rank - b.rank);
  }

  private info(t: TrackedRank): RankInfo {
    const info: RankInfo = {
      jobId: t.jobId,
      rank: t.rank,
      pid: t.record.pid || null,
      pgid: t.record.pgid || null,
      supervisorPid: t.record.supervisorPid,
      pty: t.record.pty,
      cgroup: t.record.cgroup,
      startedAt: t.startedAt,
      state: t.exit ? 'ended' : 'running',
    };
    if (t.exit) info.exit = t.exit;
    if (t.launch) Object.assign(info, { argv: t.launch.argv, cpus: t.launch.cpus, memNodes: t.launch.memNodes });
    return info;
  }
}

const AGENT_CMDLINE = readCmdline(process.pid) ?? [];

/** In memory only: a rank that never got a process. pgid 0 is refused by every kill helper. */
const NO_PROCESS: RankRecord = {
  pid: 0,
  pgid: 0,
  supervisorPid: null,
  supervisorStartTicks: null,
  cgroup: null,
  pty: false,
};

function keyOf(jobId: string, rank: number): string {
  return `${jobId}/${rank}`;
}
