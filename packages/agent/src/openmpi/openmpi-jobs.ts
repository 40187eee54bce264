// The agent's side of `--mpi openmpi` jobs (docs/mpi-openmpi.md): the state of each job on
// this node and the controller's ompi.* messages, wired to the pieces of this folder.
//
// Every node of the job prepares its planned ranks without starting them; Open MPI's
// orted starts each under the supervisor prepared for it, and the rank is then tracked as
// any rank (openmpi-ranks.ts).
//
// Rank 0's node also runs mpirun (mpirun.ts; under a supervisor: own session, cgroup,
// exit.json, supervised-process.ts) with rankd's rsh helper as its remote shell. The
// helper talks to this agent over the job's Unix socket (rsh-socket.ts), which keeps only the
// launch's values of each request; the controller builds the orted's arguments from them and
// sends them to the agent of the named host, which checks them against its own record of
// the job and runs its own orted with them under a supervisor, as part of the job, and
// reports its end.
//
// When the job ends (ompi.abort, or the lease running out without word from the
// controller), mpirun and the daemons go and the ranks never started are reported.
//
// Killing is only ever by recorded identity: the supervisors' process groups, signalled
// only until the supervisor's exit is seen (it is this agent's child, so its pid cannot be
// reused before then), and the cgroups created here. Never by name.
import fs from 'node:fs';
import path from 'node:path';
import {
  ErrorCode,
  checkOrtedArgs,
  type OmpiAbort,
  type OmpiDaemonRun,
  type OmpiDaemonState,
  type OmpiStart,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { JobExecutor } from '../jobs/job-executor.js';
import type { ControllerLink } from '../link/controller-link.js';
import { IdentityResolver, type RankUserPolicy } from '../ranks/identity.js';
import { rankCwd } from '../ranks/preflight.js';
import type { RankRunner } from '../ranks/rank-runner.js';
import { findMpirun, findOrted, mpirunArgv, openMpiSettings } from './mpirun.js';
import { jobOmpiDir, ompiFiles, privateTmpdir, writePrivate } from './ompi-files.js';
import { OpenMpiRanks, type RankJob } from './openmpi-ranks.js';
import { RshSocket } from './rsh-socket.js';
import {
  endSupervisedProcesses,
  outputTail,
  processCgroup,
  processEnd,
  startSupervisedProcess,
  type ProcessEnd,
  type SupervisedProcess,
} from './supervised-process.js';

interface OmpiJob extends RankJob {
  user: string | undefined;
  cwd: string | undefined;
  /** The job's environment as this node was sent it: its OMPI_MCA_* settings are the orted's (orted-launch.ts). */
  env: Record<string, string>;
  launcher: SupervisedProcess | null;
  launcherPending: boolean;
  /** The one daemon this node runs for the job, once the controller has asked for it (set before it starts). */
  daemonAsked: number | null;
  daemons: Map<number, SupervisedProcess>;
  /** Launcher node: where the rsh helpers ask for their daemons. */
  rsh: RshSocket | null;
}

export class OpenMpiJobs {
  private readonly jobs = new Map<string, OmpiJob>();
  private readonly identities: IdentityResolver;
  private readonly ranks: OpenMpiRanks<OmpiJob>;
  private leaseTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly runner: RankRunner,
    private readonly executor: JobExecutor,
    private readonly link: ControllerLink,
    private readonly nodeName: string,
    private readonly baseEnv: Record<string, string>,
    users: RankUserPolicy,
    private readonly log: Logger,
  ) {
    this.identities = new IdentityResolver(users);
    this.ranks = new OpenMpiRanks<OmpiJob>({
      runner,
      executor,
      identities: this.identities,
      supervisor: runner.supervisor,
      baseEnv,
      log,
      rankDone: (job) => this.maybeForget(job),
    });
    link.handle('ompi.start', (m) => void this.start(m));
    link.handle('ompi.abort', (m) => void this.abort(m));
    link.handle('ompi.daemon.run', (m) => void this.runDaemon(m));
    link.handle('ompi.daemon.state', (m) => this.daemonState(m));
    link.on('ready', () => {
      if (this.leaseTimer) clearTimeout(this.leaseTimer);
      this.leaseTimer = null;
    });
    link.on('down', () => this.onLinkDown());
  }

  private jobOmpiDir(jobId: string): string {
    return jobOmpiDir(this.runner.spool.root, jobId);
  }

  private async start(m: OmpiStart): Promise<void> {
    if (this.jobs.has(m.jobId)) return; // a repeated start after a reconnect
    const job: OmpiJob = {
      jobId: m.jobId,
      leaseMs: m.leaseMs,
      ranks: new Map(),
      aborted: null,
      user: m.ranks[0]?.user,
      cwd: m.ranks[0]?.cwd,
      env: m.ranks[0]?.env ?? {},
      exportEnv: m.exportEnv ?? {},
      launcher: null,
      launcherPending: m.launcher !== undefined,
      daemonAsked: null,
      daemons: new Map(),
      rsh: null,
    };
    this.jobs.set(m.jobId, job);
    fs.mkdirSync(this.jobOmpiDir(m.jobId), { recursive: true, mode: 0o700 });
    // every rank is ready for its orted before mpirun may start one
    await Promise.all(m.ranks.map((launch) => this.ranks.prepare(job, launch)));
    if (m.launcher) await this.startLauncher(job, m);
  }

  // ---- launcher (rank 0's node) ------------------------------------------------------

  private async startLauncher(job: OmpiJob, m: OmpiStart): Promise<void> {
    const spec = m.launcher!;
    const dir = ompiFiles.launcherDir(this.jobOmpiDir(job.jobId));
    try {
      if (job.aborted) throw new Error(`not started: ${job.aborted}`);
      const mpirun = findMpirun();
      const identity = await this.identities.resolve(job.user);
      if (identity.switchUser)
        throw new Error(`--mpi openmpi runs only as the agent's own user, not as ${identity.name}`);
      fs.mkdirSync(dir, { mode: 0o700 });
      const hostfile = path.join(dir, 'hostfile');
      writePrivate(hostfile, spec.hosts.map((h) => `${h}\n`).join(''));
      const socket = ompiFiles.rshSocket(this.jobOmpiDir(job.jobId));
      job.rsh = await RshSocket.open(socket, {
        ending: () => job.aborted,
        request: ({ daemon, host, orted }) => {
          this.log.info({ jobId: job.jobId, daemon, host, vpid: orted.vpid }, 'mpirun asks for a daemon');
          this.link.send({ type: 'ompi.daemon.request', jobId: job.jobId, daemon, host, orted });
        },
      });
      const env: Record<string, string> = {
        ...this.baseEnv,
        HOME: identity.home,
        USER: identity.name,
        LOGNAME: identity.name,
        ...openMpiSettings(spec.env),
        ...this.ranks.daemonEnv(job.jobId),
        RANKD_OMPI_SOCKET: socket,
        TMPDIR: privateTmpdir(dir),
      };
      const argv = mpirunArgv(mpirun, {
        hostfile,
        ranks: spec.hosts.length,
        supervisor: this.runner.supervisor.path,
        asRoot: identity.uid === 0,
      });
      // the job's cwd, else the user's home, or '/'
      const cwd = job.cwd ?? rankCwd(undefined, identity);
      job.launcher = await startSupervisedProcess(
        this.runner.supervisor,
        dir,
        processCgroup(this.runner.cgroupBase, job.jobId, 'ompi-launcher'),
        argv,
        env,
        cwd,
      );
      job.launcherPending = false;
      this.link.send({ type: 'ompi.launcher.state', jobId: job.jobId, state: 'started', pid: job.launcher.pid });
      this.log.info({ jobId: job.jobId, pid: job.launcher.pid }, 'mpirun started');
      void job.launcher.ended.then(() => {
        const exit = processEnd(job.launcher!);
        this.link.send({ type: 'ompi.launcher.state', jobId: job.jobId, ...exit });
        this.log.info({ jobId: job.jobId, ...exit, output: undefined }, 'mpirun ended');
        // no daemon may be asked for any more
        job.rsh?.close();
        this.maybeForget(job);
      });
    } catch (err) {
      job.launcherPending = false;
      job.rsh?.close();
      const message = (err as Error).message;
      this.log.warn({ jobId: job.jobId, err: message }, 'mpirun cannot start');
      this.link.send({
        type: 'ompi.launcher.state',
        jobId: job.jobId,
        state: 'failed',
        message,
        output: outputTail(dir, 'stderr'),
      });
      this.maybeForget(job);
    }
  }

  /** The controller relays what became of a daemon mpirun asked for: tell its rsh helper. */
  private daemonState(m: OmpiDaemonState): void {
    this.jobs.get(m.jobId)?.rsh?.daemonState(m);
  }

  // ---- daemons (any node of the job) -------------------------------------------------

  /**
   * Runs the job's orted here, when this node's own record of the job expects one: the job
   * is known here and not ending, this node has no daemon of it yet, the arguments are
   * exactly those the job's launch and settings make (orted-launch.ts), and the job's user
   * passes the rule ranks obey. The program is this node's own `orted`, run without a shell.
   */
  private async runDaemon(m: OmpiDaemonRun): Promise<void> {
    const job = this.jobs.get(m.jobId);
    const host = this.nodeName;
    const report = (state: ProcessEnd): void => {
      this.link.send({ type: 'ompi.daemon.state', jobId: m.jobId, daemon: m.daemon, host, ...state });
    };
    const refuse = (code: string, message: string): void => {
      this.log.warn({ jobId: m.jobId, daemon: m.daemon, code }, `Open MPI daemon refused: ${message}`);
      report({ state: 'failed', message: `${code}: ${message}` });
    };
    if (!job) return refuse(ErrorCode.ForeignJob, `job ${m.jobId} is not an Open MPI job on ${host}`);
    if (job.aborted) return report({ state: 'failed', message: `the job is ending on ${host}: ${job.aborted}` });
    if (job.daemonAsked === m.daemon) return; // a repeated run after a reconnect
    if (job.daemonAsked !== null)
      return refuse(ErrorCode.OmpiDaemonRefused, `job ${m.jobId} already has its Open MPI daemon on ${host}`);
    try {
      checkOrtedArgs(m.args, job.env);
    } catch (err) {
      return refuse(ErrorCode.OrtedLaunchInvalid, (err as Error).message);
    }
    // taken before anything is awaited: a second run, whatever its index, finds it taken
    job.daemonAsked = m.daemon;
    const dir = ompiFiles.daemonDir(this.jobOmpiDir(job.jobId), m.daemon);
    try {
      const orted = findOrted();
      // the root rule of ranks; and only the agent's own user (as the launcher: docs/mpi-openmpi.md, Limits)
      const identity = await this.identities.resolve(job.user);
      if (identity.switchUser)
        throw new Error(`--mpi openmpi runs only as the agent's own user, not as ${identity.name}`);
      fs.mkdirSync(dir, { mode: 0o700 });
      const env: Record<string, string> = {
        ...this.baseEnv,
        HOME: identity.home,
        USER: identity.name,
        LOGNAME: identity.name,
        ...this.ranks.daemonEnv(job.jobId),
        TMPDIR: privateTmpdir(dir),
      };
      const cgroup = processCgroup(this.runner.cgroupBase, job.jobId, `ompi-daemon${m.daemon}`);
      // the user's home, or '/'
      const proc = await startSupervisedProcess(
        this.runner.supervisor,
        dir,
        cgroup,
        [orted, ...m.args],
        env,
        rankCwd(undefined, identity),
      );
      job.daemons.set(m.daemon, proc);
      report({ state: 'started', pid: proc.pid });
      this.log.info({ jobId: job.jobId, daemon: m.daemon, pid: proc.pid }, 'Open MPI daemon started');
      void proc.ended.then(() => {
        const exit = processEnd(proc);
        report(exit);
        this.log.info({ jobId: job.jobId, daemon: m.daemon, ...exit, output: undefined }, 'Open MPI daemon ended');
        // the daemons of this node are done: no rank will start here any more
        if ([...job.daemons.values()].every((d) => d.done))
          this.ranks.endWaiting(job, `Open MPI's daemon on ${host} ended without starting this rank`);
        this.maybeForget(job);
      });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      const message =
        typeof code === 'string' && code.startsWith('RANKD_')
          ? `${code}: ${(err as Error).message}`
          : (err as Error).message;
      report({ state: 'failed', message, output: outputTail(dir, 'stderr') });
    }
  }

  // ---- ending ------------------------------------------------------------------------

  /** The job ends (fail-fast, cancel, timeout, mpirun's end): mpirun and daemons go, ranks never started are reported. */
  private async abort(m: OmpiAbort): Promise<void> {
    const job = this.jobs.get(m.jobId);
    if (!job) return;
    job.aborted ??= m.reason;
    job.rsh?.close();
    job.rsh?.endAll(m.reason);
    const procs = [...(job.launcher ? [job.launcher] : []), ...job.daemons.values()];
    await endSupervisedProcesses(procs, m.graceMs);
    this.ranks.endWaiting(job, `not started: ${m.reason}`);
    // ranks orted started in the meantime were killed as they came (openmpi-ranks.ts: attach)
    this.maybeForget(job);
  }

  private onLinkDown(): void {
    if (this.leaseTimer || this.jobs.size === 0) return;
    const leaseMs = Math.min(...[...this.jobs.values()].map((j) => j.leaseMs));
    this.leaseTimer = setTimeout(() => {
      this.leaseTimer = null;
      for (const job of this.jobs.values())
        void this.abort({
          type: 'ompi.abort',
          jobId: job.jobId,
          graceMs: 5000,
          reason: 'lease expired without word from the controller',
        });
    }, leaseMs);
    this.leaseTimer.unref();
  }

  /** Everything of the job here is over: drop its state and its launcher/daemon files (rank dirs go with job.release). */
  private maybeForget(job: OmpiJob): void {
    if (job.launcherPending || (job.launcher && !job.launcher.done)) return;
    if ([...job.daemons.values()].some((d) => !d.done)) return;
    if (!this.ranks.allDone(job)) return;
    if (!job.launcher && job.daemons.size === 0 && !job.aborted) return; // ranks attached, daemons not yet asked for
    job.rsh?.close();
    this.jobs.delete(job.jobId);
    fs.rmSync(this.jobOmpiDir(job.jobId), { recursive: true, force: true });
  }

  close(): void {
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
    for (const job of this.jobs.values()) {
      job.rsh?.close();
      this.ranks.unwatch(job);
    }
  }
}
