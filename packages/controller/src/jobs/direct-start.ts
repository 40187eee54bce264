// The --mpi pmi1 and none strategies: each agent starts its ranks itself (job.start). Under
// pmi1 the start carries the job's PMI world (size and process mapping), from which each
// agent serves its ranks a PMI-1 server; under none it carries no PMI at all. Neither
// mode runs anything beside the ranks, so stopping and ending are the lifecycle's alone.
import type { JobStart, PmiJobSpec, RankLaunch } from '@rankd/protocol';
import { processMapping } from '../pmi/process-mapping.js';
import type { AgentSender } from '../gateway/agent-sender.js';
import type { LiveJobView } from './live-job.js';
import type { MpiStrategy } from './mpi-strategy.js';
import { hoistSharedEnv } from './shared-env.js';

export class DirectStart implements MpiStrategy {
  constructor(
    private readonly agents: AgentSender,
    /** Whether the starts carry a PMI world (pmi1) or none (none). */
    private readonly withPmi: boolean,
  ) {}

  startRanks(live: LiveJobView, byNode: ReadonlyMap<string, RankLaunch[]>, leaseMs: number): string | null {
    const { job } = live;
    const rankMap = job.rankMap!;
    const pmi: PmiJobSpec | null = this.withPmi
      ? { size: rankMap.worldSize, processMapping: processMapping(rankMap) }
      : null;
    const exportEnv = job.submit.exportEnv;
    for (const [node, ranks] of byNode) {
      // each node's shared environment once, not once per rank (shared-env.ts)
      const env = hoistSharedEnv(ranks);
      const start: JobStart = {
        type: 'job.start',
        jobId: live.attemptId,
        leaseMs,
        ranks,
        env,
        ...(exportEnv ? { exportEnv } : {}),
        ...(pmi ? { pmi } : {}),
      };
      if (!this.agents.send(node, start)) return `node ${node} is not connected`;
    }
    return null;
  }

  stopping(): void {}

  holdsEnd(): boolean {
    return false;
  }

  released(): void {}
}
