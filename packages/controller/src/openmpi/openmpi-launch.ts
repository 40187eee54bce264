// The controller's side of `--mpi openmpi` jobs (docs/mpi-openmpi.md) once they run: the
// starts and stops are the strategy's (openmpi-mode.ts); this answers what the nodes say
// of mpirun and its daemons. It has the nodes of the job, and only those, start the
// daemons mpirun asks for (from rank 0's node only, each once, with arguments built here
// from the launch's checked values and the job's own settings: orted-launch.ts;
// docs/security.md "Agent messages"); fails the job, with the daemon's or mpirun's own
// last output as the reason, when either fails; and has the lifecycle judge the job again
// once they have ended. What mpirun and each daemon did is in the job's history (events
// ompi.launcher and ompi.daemon, with the last bytes of their output).
import {
  ErrorCode,
  checkOrtedLaunch,
  hnpAddresses,
  ortedArgs,
  type OmpiDaemonRequest,
  type OmpiDaemonState,
  type OmpiLauncherState,
  type OrtedLaunch,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { NodeRegistry } from '../nodes/node-registry.js';
import type { AgentHandlers, AuthenticatedAgent } from '../gateway/agent-handlers.js';
import type { AgentRefusals } from '../gateway/agent-refusal.js';
import type { AgentSender } from '../gateway/agent-sender.js';
import type { JobLifecycle } from '../jobs/job-lifecycle.js';
import { graceSeconds } from '../jobs/job-view.js';
import { nodesOf, type LiveJobView } from '../jobs/live-job.js';
import type { EventsRepo } from '../store/events-repo.js';
import { plural } from '@rankd/protocol/plural';
import type { OmpiAttempt, OpenMpiMode } from './openmpi-mode.js';

export class OpenMpiLaunch {
  constructor(
    private readonly lifecycle: JobLifecycle,
    private readonly mode: OpenMpiMode,
    private readonly agents: AgentSender,
    private readonly registry: NodeRegistry,
    private readonly events: Pick<EventsRepo, 'append'>,
    private readonly refusals: AgentRefusals,
    private readonly log: Logger,
  ) {}

  handlers(): AgentHandlers {
    return {
      'ompi.daemon.request': (conn, m) => this.daemonRequest(conn, m),
      'ompi.daemon.state': (conn, m) => this.daemonState(conn, m),
      'ompi.launcher.state': (conn, m) => this.launcherState(conn, m),
    };
  }

  /**
   * mpirun asks for a daemon: only rank 0's node, which runs it, may ask; only for a node of
   * the job, each node and each daemon once, with a launch that passes the grammar and names
   * the launcher node's own addresses. The daemon's arguments are built here; what the node
   * sent is never relayed.
   */
  /** Tells the launcher's helper, which waits on an answer about its daemon, that it failed. */
  private daemonFailed(node: string, m: OmpiDaemonRequest, message: string): void {
    this.agents.send(node, {
      type: 'ompi.daemon.state',
      jobId: m.jobId,
      daemon: m.daemon,
      host: m.host,
      state: 'failed',
      message,
    });
  }

  private daemonRequest(conn: AuthenticatedAgent, m: OmpiDaemonRequest): void {
    const node = conn.name;
    const refuse = (code: string, message: string): void => {
      this.refusals.refuse(node, {
        type: m.type,
        code,
        message,
        resource: { job: m.jobId, daemon: String(m.daemon), host: m.host },
      });
    };
    // the launcher's own helper waits for an answer about its daemon: it fails with this
    const fail = (code: string, message: string): void => {
      refuse(code, message);
      this.daemonFailed(node, m, `${code}: ${message}`);
    };
    const job = this.jobOf(node, m, fail, () => this.daemonFailed(node, m, `job ${m.jobId} is not live`));
    if (!job) return;
    const { live, state } = job;
    if (node !== state.launcherNode)
      return refuse(ErrorCode.NotJobLauncher, `${node} does not run the launcher of job ${m.jobId}`);
    if (state.daemons.has(m.daemon))
      return refuse(ErrorCode.OmpiDaemonRefused, `daemon ${m.daemon} of job ${m.jobId} was already asked for`);
    const nodes = nodesOf(live);
    if (m.daemon >= nodes.length)
      return fail(
        ErrorCode.OmpiDaemonRefused,
        `daemon ${m.daemon} is out of range: job ${m.jobId} has ${plural(nodes.length, 'node')}`,
      );
    if (!nodes.includes(m.host)) return fail(ErrorCode.OmpiDaemonRefused, `${m.host} is not a node of job ${m.jobId}`);
    if ([...state.daemons.values()].some((d) => d.host === m.host))
      return fail(ErrorCode.OmpiDaemonRefused, `job ${m.jobId} already has its daemon on ${m.host}`);
    const bad = this.badLaunch(state, nodes.length, m.orted);
    if (bad) return fail(ErrorCode.OrtedLaunchInvalid, bad);
    if (live.stopping) {
      this.agents.send(node, {
        type: 'ompi.daemon.state',
        jobId: m.jobId,
        daemon: m.daemon,
        host: m.host,
        state: 'failed',
        message: `the job is ending: ${live.stopping.reason}`,
      });
      return;
    }
    state.launch ??= m.orted;
    state.daemons.set(m.daemon, { host: m.host, vpid: m.orted.vpid, state: 'pending' });
    this.events.append('ompi.daemon', m.jobId, { daemon: m.daemon, host: m.host, state: 'requested' });
    const args = ortedArgs(m.orted, launchEnv(live));
    if (!this.agents.send(m.host, { type: 'ompi.daemon.run', jobId: m.jobId, daemon: m.daemon, args })) {
      state.daemons.get(m.daemon)!.state = 'ended';
      this.agents.send(node, {
        type: 'ompi.daemon.state',
        jobId: m.jobId,
        daemon: m.daemon,
        host: m.host,
        state: 'failed',
        message: `node ${m.host} is not connected`,
      });
      this.fail(live, `Open MPI daemon on ${m.host} could not start: node ${m.host} is not connected`);
    }
  }

  /** Why this launch is not one of this job's mpirun, or null. */
  private badLaunch(state: OmpiAttempt, nodeCount: number, launch: OrtedLaunch): string | null {
    try {
      checkOrtedLaunch(launch);
    } catch (err) {
      return (err as Error).message;
    }
    if (launch.numProcs > nodeCount + 1)
      return `${plural(launch.numProcs, 'daemon')} for a job of ${plural(nodeCount, 'node')}`;
    if ([...state.daemons.values()].some((d) => d.vpid === launch.vpid))
      return `vpid ${launch.vpid} was already asked for`;
    const first = state.launch;
    if (
      first &&
      (first.jobFamily !== launch.jobFamily ||
        first.numProcs !== launch.numProcs ||
        first.nodeRegex !== launch.nodeRegex ||
        first.hnpUri !== launch.hnpUri)
    ) {
      return "the launch differs from the first daemon's of this mpirun";
    }
    const own = this.addressesOf(state.launcherNode);
    if (own.size === 0) return `${state.launcherNode} has reported no addresses: its mpirun cannot be checked`;
    const foreign = hnpAddresses(launch.hnpUri).filter((a) => !own.has(a.toLowerCase()));
    if (foreign.length) return `the HNP URI names ${foreign.join(', ')}, not an address of ${state.launcherNode}`;
    return null;
  }

  /** The node's addresses: those its facts and hello claim, and the one its link comes from. */
  private addressesOf(node: string): Set<string> {
    const n = this.registry.get(node);
    const out = new Set<string>();
    const link = this.registry.link(node)?.remoteAddress;
    if (link) out.add(link.replace(/^::ffff:/, '').toLowerCase());
    if (n?.address) out.add(n.address.toLowerCase());
    for (const nic of n?.facts?.nics ?? []) for (const a of nic.addresses) out.add(a.address.toLowerCase());
    return out;
  }

  /** What became of a daemon: only from the node it was asked of, about itself. */
  private daemonState(conn: AuthenticatedAgent, m: OmpiDaemonState): void {
    const node = conn.name;
    const refuse = (code: string, message: string): void => {
      this.refusals.refuse(node, {
        type: m.type,
        code,
        message,
        resource: { job: m.jobId, daemon: String(m.daemon), host: m.host },
      });
    };
    const job = this.jobOf(node, m, refuse, () => {}, true);
    if (!job) return;
    const { live, state } = job;
    const daemon = state?.daemons.get(m.daemon);
    if (m.host !== node) return refuse(ErrorCode.OmpiDaemonRefused, `${node} reports a daemon of ${m.host}`);
    if (!state) {
      // this controller restarted since the request: still let mpirun's helper hear of its daemon
      this.agents.send(live.job.rankMap!.ranks[0]!.node, { ...m });
      return;
    }
    if (!daemon || daemon.host !== node)
      return refuse(ErrorCode.OmpiDaemonRefused, `daemon ${m.daemon} of job ${m.jobId} was not asked of ${node}`);
    if (daemon.state === 'ended') return;
    daemon.state = m.state === 'started' ? 'started' : 'ended';
    this.events.append('ompi.daemon', m.jobId, describe(m));
    // mpirun's rsh helper waits for this
    this.agents.send(state.launcherNode, { ...m });
    if (m.state === 'failed')
      this.fail(live, `Open MPI daemon on ${node} could not run: ${m.message ?? 'unknown'}${lastLines(m.output)}`);
    else if (m.state === 'exited' && (m.code !== 0 || m.signal))
      this.fail(live, `Open MPI daemon on ${node} ${ended(m)}${lastLines(m.output)}`);
    if (daemon.state === 'ended') this.lifecycle.recheck(m.jobId);
  }

  /** What became of mpirun: only from the node that runs it. */
  private launcherState(conn: AuthenticatedAgent, m: OmpiLauncherState): void {
    const node = conn.name;
    const refuse = (code: string, message: string): void => {
      this.refusals.refuse(node, { type: m.type, code, message, resource: { job: m.jobId } });
    };
    const job = this.jobOf(node, m, refuse);
    if (!job) return;
    const { live, state } = job;
    if (node !== state.launcherNode)
      return refuse(ErrorCode.NotJobLauncher, `${node} does not run the launcher of job ${m.jobId}`);
    if (state.launcher === 'ended') return;
    state.launcher = m.state === 'started' ? 'started' : 'ended';
    this.events.append('ompi.launcher', m.jobId, { node, ...describe(m) });
    if (m.state === 'started') return;
    if (m.state === 'failed')
      this.fail(live, `mpirun on ${node} could not run: ${m.message ?? 'unknown'}${lastLines(m.output)}`);
    else if (m.code !== 0 || m.signal) this.fail(live, `mpirun on ${node} ${ended(m)}${lastLines(m.output)}`);
    // mpirun is gone: no rank can start any more; the nodes report those that never did,
    // and end any daemon still there
    if (this.lifecycle.attempt(m.jobId))
      this.mode.stopping(live, 'mpirun ended', Math.round(graceSeconds(live.job) * 1000));
    this.lifecycle.recheck(m.jobId);
  }

  /**
   * The live Open MPI job `m` is about, when `node` is one of its nodes; otherwise the
   * message is refused (audited) or, for a job no longer live, answered as stale (and
   * `stale` told). `restarted`: the job may have no state here yet (this controller
   * restarted since its start).
   */
  private jobOf<R extends boolean = false>(
    node: string,
    m: { type: string; jobId: string },
    refuse: (code: string, message: string) => void,
    stale: () => void = () => {},
    restarted?: R,
  ): { live: LiveJobView; state: R extends true ? OmpiAttempt | undefined : OmpiAttempt } | null {
    const live = this.lifecycle.attempt(m.jobId);
    const state = this.mode.attempt(m.jobId);
    if (!live) {
      this.refusals.stale(node, { type: m.type, code: ErrorCode.ForeignJob, message: `job ${m.jobId} is not live` });
      stale();
      return null;
    }
    if (!nodesOf(live).includes(node)) {
      refuse(ErrorCode.ForeignJob, `${node} has no part in job ${m.jobId}`);
      return null;
    }
    if (live.job.submit.mpi !== 'openmpi') {
      refuse(ErrorCode.OmpiDaemonRefused, `job ${m.jobId} is not an Open MPI job`);
      return null;
    }
    if (!state && !restarted) {
      refuse(
        ErrorCode.OmpiDaemonRefused,
        `this controller has no record of job ${m.jobId}'s launch (it restarted since the job started)`,
      );
      return null;
    }
    return { live, state: state as OmpiAttempt };
  }

  private fail(live: LiveJobView, reason: string): void {
    this.lifecycle.fail(live.attemptId, reason);
  }
}

/** The environment rank 0 is launched with (the planner's, the placement's and the submit's variables, as rank-launches.ts merges them): its OMPI_MCA_* settings are the orteds'. */
function launchEnv(live: LiveJobView): Record<string, string> {
  return { ...live.job.rankMap!.ranks[0]!.env, ...live.job.submit.env };
}

function describe(m: OmpiDaemonState | OmpiLauncherState): Record<string, unknown> {
  const { type: _type, jobId: _jobId, ...rest } = m;
  return rest;
}

function ended(m: { code?: number | null; signal?: string | null }): string {
  return m.signal ? `was killed by ${m.signal}` : `exited with code ${m.code}`;
}

/** The last few lines of a process's output, for a job's reason. */
function lastLines(output: string | undefined): string {
  const lines = (output ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return lines.length ? `: ${lines.slice(-3).join(' | ').slice(-600)}` : '';
}
