// The --mpi openmpi strategy (docs/mpi-openmpi.md): each node of the job prepares its ranks
// (ompi.start) and rank 0's node also runs the launcher, mpirun, which asks for a daemon on
// every node (openmpi-launch.ts answers those asks). Stopping the job ends mpirun and its
// daemons too, and a job whose ranks have all ended stays live until they have ended as
// well, so that nothing of a job runs after it ended.
import type { OmpiStart, OrtedLaunch, RankLaunch } from '@rankd/protocol';
import type { AgentSender } from '../gateway/agent-sender.js';
import type { LiveJobView } from '../jobs/live-job.js';
import { nodesOf } from '../jobs/live-job.js';
import type { MpiStrategy } from '../jobs/mpi-strategy.js';
import type { EventsRepo } from '../store/events-repo.js';

export type ProcState = 'pending' | 'started' | 'ended';

/** One attempt's mpirun and daemons, as far as the controller knows them. */
export interface OmpiAttempt {
  launcherNode: string;
  launcher: ProcState;
  daemons: Map<number, { host: string; vpid: number; state: ProcState }>;
  /** The first daemon's launch: every daemon of one mpirun shares its job family, count, node regex and HNP. */
  launch: OrtedLaunch | null;
}

export class OpenMpiMode implements MpiStrategy {
  private readonly attempts = new Map<string, OmpiAttempt>();

  constructor(
    private readonly agents: AgentSender,
    private readonly events: Pick<EventsRepo, 'append'>,
    /** Whether the node's agent is connected now. */
    private readonly connected: (node: string) => boolean,
  ) {}

  /** The job's mpirun and daemons; undefined before its start, or when this controller restarted since. */
  attempt(jobId: string): OmpiAttempt | undefined {
    return this.attempts.get(jobId);
  }

  startRanks(live: LiveJobView, byNode: ReadonlyMap<string, RankLaunch[]>, leaseMs: number): string | null {
    const { job, attemptId } = live;
    const launcherNode = job.rankMap!.ranks[0]!.node;
    let attempt = this.attempts.get(attemptId);
    const first = !attempt;
    if (!attempt) {
      attempt = { launcherNode, launcher: 'pending', daemons: new Map(), launch: null };
      this.attempts.set(attemptId, attempt);
    }
    const exportEnv = job.submit.exportEnv;
    for (const [node, ranks] of byNode) {
      const launcher = first && node === launcherNode ? launcherOf(job) : undefined;
      const start: OmpiStart = {
        type: 'ompi.start',
        jobId: attemptId,
        leaseMs,
        ranks,
        ...(exportEnv ? { exportEnv } : {}),
        ...(launcher ? { launcher } : {}),
      };
      if (!this.agents.send(node, start)) {
        if (launcher) attempt.launcher = 'ended';
        return `node ${node} is not connected`;
      }
    }
    this.events.append('ompi.launcher', attemptId, { state: 'requested', node: launcherNode });
    return null;
  }

  /** Asks every node of the job to end its mpirun and daemons (once the job has any here). */
  stopping(live: LiveJobView, reason: string, graceMs: number): void {
    if (!this.attempts.has(live.attemptId)) return;
    for (const node of nodesOf(live)) {
      this.agents.send(node, { type: 'ompi.abort', jobId: live.attemptId, graceMs, reason });
    }
  }

  /** A job whose ranks have all ended stays live while mpirun or a daemon of it still runs on a connected node. */
  holdsEnd(live: LiveJobView): boolean {
    const attempt = this.attempts.get(live.attemptId);
    if (!attempt) return false;
    if (attempt.launcher !== 'ended' && this.connected(attempt.launcherNode)) return true;
    for (const d of attempt.daemons.values()) if (d.state !== 'ended' && this.connected(d.host)) return true;
    return false;
  }

  released(jobId: string): void {
    this.attempts.delete(jobId);
  }
}

/** What rank 0's node runs mpirun with: the host of every rank, in rank order, and the job's own variables. */
function launcherOf(job: LiveJobView['job']): { hosts: string[]; env: Record<string, string> } {
  return { hosts: job.rankMap!.ranks.map((r) => r.node), env: job.submit.env ?? {} };
}
