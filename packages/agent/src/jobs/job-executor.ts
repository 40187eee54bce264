// The agent's side of jobs: maps the controller's job messages onto the rank runner,
// streams output and exits back, and keeps the lease — a job whose controller has
// been silent for longer than its lease is ended here, with nobody's help.
import type { JobAbort, JobRelease, JobResume, JobSignal, JobStart, RankLaunch as WireLaunch } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { ControllerLink } from '../link/controller-link.js';
import type { PmiServer } from '../pmi/pmi-server.js';
import { watchRankDir } from '../ranks/dir-watch.js';
import { shellStatusOf } from '../ranks/errors.js';
import { RankOutput } from '../ranks/output.js';
import type { RankRunner } from '../ranks/rank-runner.js';
import type { RankExit, RankInfo } from '../ranks/rank-spec.js';
import type { StartedRank } from '../ranks/rank-spec.js';
import { OutputPump } from './output-pump.js';
import { RankStdinChannels } from './rank-stdin.js';

/** Lease of jobs adopted after an agent restart, whose job.start (and lease) is gone. */
const DEFAULT_LEASE_MS = 60_000;
/** Grace of a lease-expiry abort: nobody is waiting for a clean shutdown. */
const LEASE_ABORT_GRACE_MS = 5_000;

interface JobEntry {
  leaseMs: number;
  pumps: Map<number, OutputPump>;
  unwatch: Map<number, () => void>;
}

export class JobExecutor {
  private readonly jobs = new Map<string, JobEntry>();
  private readonly output: RankOutput;
  private readonly stdin: RankStdinChannels;
  private leaseTimer: NodeJS.Timeout | null = null;
  /** Jobs whose release came while ranks still ran: their spool goes once an abort has ended them. */
  private readonly releaseAfterAbort = new Set<string>();

  constructor(
    private readonly runner: RankRunner,
    private readonly link: ControllerLink,
    private readonly baseEnv: Record<string, string>,
    private readonly log: Logger,
    /** Serves the ranks of jobs started with a PMI spec. */
    private readonly pmi: PmiServer,
  ) {
    this.output = new RankOutput(runner.spool);
    this.stdin = new RankStdinChannels(link, log);
    runner.on('exit', (exit) => this.onExit(exit));
    link.handle('job.start', (m) => void this.start(m));
    link.handle('job.abort', (m) => void this.abort(m));
    link.handle('job.signal', (m) => this.signal(m));
    link.handle('job.resume', (m) => this.resume(m));
    link.handle('job.release', (m) => this.release(m));
    link.on('ready', () => this.onLinkUp());
    link.on('down', () => this.onLinkDown());
  }

  /** After an agent restart: take back the ranks in the spool (the controller resumes them). */
  async adopt(): Promise<void> {
    const found = await this.runner.adopt();
    for (const info of found) {
      const entry = this.entry(info.jobId, DEFAULT_LEASE_MS);
      const pump = this.pumpFor(entry, info.jobId, info.rank, true);
      if (info.exit) pump.ended(info.exit);
      else this.watch(entry, info.jobId, info.rank, pump);
    }
    if (found.length > 0) this.log.info({ ranks: found.length }, 'adopted ranks from the spool');
  }

  /** Ends every job's ranks here (an ephemeral agent stopping): SIGTERM, then SIGKILL after `graceMs`. */
  async endAll(graceMs: number): Promise<void> {
    const jobIds = [...this.jobs.keys()];
    for (const jobId of jobIds) this.pmi.closeJob(jobId, 'the agent is stopping');
    await Promise.all(jobIds.map((jobId) => this.runner.abortJob(jobId, graceMs)));
  }

  close(): void {
    this.pmi.close();
    this.stdin.close();
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
    for (const entry of this.jobs.values()) {
      for (const p of entry.pumps.values()) p.stop();
      for (const u of entry.unwatch.values()) u();
    }
    this.runner.close();
  }

  private async start(m: JobStart): Promise<void> {
    const entry = this.entry(m.jobId, m.leaseMs);
    entry.leaseMs = m.leaseMs;
    if (m.pmi)
      this.pmi.openJob(
        m.jobId,
        m.pmi,
        m.ranks.map((r) => r.rank),
      );
    const shared = m.env;
    const launches = shared ? m.ranks.map((launch) => ({ ...launch, env: { ...shared, ...launch.env } })) : m.ranks;
    const inherited = this.inherited(m.exportEnv);
    await Promise.all(launches.map((launch) => this.startRank(entry, m.jobId, launch, inherited)));
  }

  /** What every rank of a job inherits beneath its own env (ranks/preflight.ts rankEnv): the agent's PATH and locale, then the submitter's exported variables. */
  private inherited(exportEnv: Record<string, string> | undefined): Record<string, string> {
    return { ...this.baseEnv, ...exportEnv };
  }

  private async startRank(
    entry: JobEntry,
    jobId: string,
    launch: WireLaunch,
    inherited: Record<string, string>,
  ): Promise<void> {
    if (entry.pumps.has(launch.rank)) return; // a repeated job.start after a reconnect
    const pump = this.pumpFor(entry, jobId, launch.rank, false);
    try {
      const pmi = this.pmi.hasJob(jobId) ? await this.pmi.rankEnv(jobId, launch.rank, launch.pty === true) : null;
      const started = await this.runner.start({
        jobId,
        rank: launch.rank,
        argv: launch.argv,
        // the job's own variables win, as everywhere: a PMI_FD set on purpose is the user's call
        env: { ...pmi?.env, ...launch.env },
        inherited,
        ...(pmi?.fd ? { passSocket: true } : {}),
        cpus: launch.cpus,
        memNodes: launch.memNodes,
        ...(launch.cwd ? { cwd: launch.cwd } : {}),
        ...(launch.user ? { user: launch.user } : {}),
        ...(launch.pty ? { pty: true } : {}),
        ...(launch.stdin ? { stdin: true } : {}),
      });
      if (started.passedSocket) this.pmi.attach(jobId, launch.rank, started.passedSocket);
      // before rank.started: the controller sends the rank's stdin once it has heard that
      if (started.stdin) this.stdin.attach(jobId, launch.rank, started.stdin);
      this.announce(entry, started, pump);
    } catch (err) {
      const e = err as { code?: string; message: string };
      this.log.warn({ jobId, rank: launch.rank, code: e.code, err: e.message }, 'rank failed to start');
      this.stopWatching(entry, launch.rank);
      pump.stop();
      this.link.send({
        type: 'rank.exit',
        jobId,
        rank: launch.rank,
        // what a shell would report for this failure (127 not found, 126 not executable), else none
        code: shellStatusOf(e.code),
        signal: null,
        endedAt: new Date().toISOString(),
        outputBytes: { stdout: 0, stderr: 0 },
        error: { code: e.code ?? 'RANKD_RANK_SPAWN_FAILED', message: e.message },
      });
    }
  }

  private async abort(m: JobAbort): Promise<void> {
    this.log.info({ jobId: m.jobId, reason: m.reason, graceMs: m.graceMs }, 'aborting job');
    // ranks blocked in a PMI barrier or get hear at once that the job is over
    this.pmi.closeJob(m.jobId, `the job is being ended: ${m.reason}`);
    await this.runner.abortJob(m.jobId, m.graceMs);
    // the controller ends an orphan (a rank of a job no longer live) with an abort and a
    // release together: the release could not drop the spool of a rank still running
    if (this.releaseAfterAbort.delete(m.jobId)) this.forgetSpool(m.jobId);
  }

  private signal(m: JobSignal): void {
    this.runner.signal(m.jobId, m.rank ?? 'all', m.signal as NodeJS.Signals);
  }

  private resume(m: JobResume): void {
    const entry = this.jobs.get(m.jobId);
    const pump = entry?.pumps.get(m.rank);
    if (!pump) {
      this.log.warn({ jobId: m.jobId, rank: m.rank }, 'resume of a rank this agent does not hold');
      return;
    }
    pump.resume(m.offsets);
  }

  private release(m: JobRelease): void {
    this.pmi.closeJob(m.jobId, 'the job has ended');
    this.stdin.forgetJob(m.jobId);
    const entry = this.jobs.get(m.jobId);
    if (entry) {
      for (const p of entry.pumps.values()) p.stop();
      for (const u of entry.unwatch.values()) u();
      this.jobs.delete(m.jobId);
    }
    if (!this.forgetSpool(m.jobId)) this.releaseAfterAbort.add(m.jobId);
  }

  /** Drops the job's spool; false while a rank of it still runs. */
  private forgetSpool(jobId: string): boolean {
    try {
      this.runner.forget(jobId);
      return true;
    } catch (err) {
      this.log.warn({ jobId, err: (err as Error).message }, 'cannot release job spool yet');
      return false;
    }
  }

  private onExit(exit: RankExit): void {
    const entry = this.jobs.get(exit.jobId);
    const pump = entry?.pumps.get(exit.rank);
    if (!entry || !pump) return;
    this.stopWatching(entry, exit.rank);
    // a PMI failure of this rank (closed before finalize) is reported ahead of its exit
    this.pmi.rankExited(exit);
    pump.ended(exit);
  }

  private onLinkUp(): void {
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
    this.leaseTimer = null;
    const ranks = this.runner.list().map((info: RankInfo) => ({
      jobId: info.jobId,
      rank: info.rank,
      state: info.state === 'running' ? ('running' as const) : ('exited' as const),
      pid: info.pid,
      outputBytes: {
        stdout: this.output.size(info.jobId, info.rank, 'stdout'),
        stderr: this.output.size(info.jobId, info.rank, 'stderr'),
      },
    }));
    this.link.send({ type: 'ranks.report', ranks });
  }

  /** The controller is gone: if it stays gone past the shortest lease, end the jobs here. */
  private onLinkDown(): void {
    if (this.leaseTimer || this.jobs.size === 0) return;
    const leaseMs = Math.min(...[...this.jobs.values()].map((e) => e.leaseMs));
    this.leaseTimer = setTimeout(() => {
      this.leaseTimer = null;
      for (const jobId of this.jobs.keys()) {
        this.log.warn({ jobId, leaseMs }, 'lease expired without word from the controller; ending the job here');
        void this.runner.abortJob(jobId, LEASE_ABORT_GRACE_MS);
      }
    }, leaseMs);
    this.leaseTimer.unref();
  }

  /**
   * A rank this executor did not start (Open MPI's orted did; openmpi/) is now tracked by
   * the runner: report its start and stream its output and exit as for any rank.
   */
  attached(jobId: string, leaseMs: number, started: StartedRank): void {
    const entry = this.entry(jobId, leaseMs);
    if (entry.pumps.has(started.rank)) return;
    this.announce(entry, started, this.pumpFor(entry, jobId, started.rank, false));
  }

  /** rank.started with the binding as read, then the exit watch and the output pump. */
  private announce(entry: JobEntry, started: StartedRank, pump: OutputPump): void {
    const b = started.binding;
    const detail = b.mismatch
      ? `mismatch: ${b.mismatch}`
      : b.unread
        ? `not read: the rank ${b.unread === 'exited' ? 'exited first' : 'did not get past its wrappers in time'}`
        : undefined;
    this.link.send({
      type: 'rank.started',
      jobId: started.jobId,
      rank: started.rank,
      pid: started.pid,
      startedAt: started.startedAt,
      binding: { cpus: b.cpus, memNodes: b.memNodes, verified: b.verified, ...(detail ? { detail } : {}) },
      warnings: started.warnings,
    });
    if (!pump.hasEnded) this.watch(entry, started.jobId, started.rank, pump);
    pump.announce();
  }

  /** A planned rank that will never run (its launcher failed or the job ended first): its exit, with why. */
  notStarted(jobId: string, rank: number, error: { code: string; message: string }): void {
    this.link.send({
      type: 'rank.exit',
      jobId,
      rank,
      code: null,
      signal: null,
      endedAt: new Date().toISOString(),
      outputBytes: { stdout: this.output.size(jobId, rank, 'stdout'), stderr: this.output.size(jobId, rank, 'stderr') },
      error,
    });
  }

  private entry(jobId: string, leaseMs: number): JobEntry {
    let entry = this.jobs.get(jobId);
    if (!entry) this.jobs.set(jobId, (entry = { leaseMs, pumps: new Map(), unwatch: new Map() }));
    return entry;
  }

  private pumpFor(entry: JobEntry, jobId: string, rank: number, announced: boolean): OutputPump {
    let pump = entry.pumps.get(rank);
    if (!pump) {
      pump = new OutputPump(jobId, rank, this.output, this.link, announced);
      entry.pumps.set(rank, pump);
    }
    return pump;
  }

  /** New bytes in the rank's files wake its pump (inotify, or a short poll where there is none). */
  private watch(entry: JobEntry, jobId: string, rank: number, pump: OutputPump): void {
    entry.unwatch.set(
      rank,
      watchRankDir(this.runner.spool.rankDir(jobId, rank), () => pump.kick()),
    );
  }

  private stopWatching(entry: JobEntry, rank: number): void {
    entry.unwatch.get(rank)?.();
    entry.unwatch.delete(rank);
  }
}
