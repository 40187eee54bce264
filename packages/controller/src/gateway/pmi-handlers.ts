// Agent messages of the PMI exchange, routed to the fence and to the job lifecycle.
import type { PmiFailed, PmiFence, PmiFetch } from '@rankd/protocol';
import type { JobManager } from '../jobs/job-manager.js';
import type { FenceExchange } from '../pmi/fence-exchange.js';
import type { AgentHandler } from './agent-connection.js';
import type { AgentRefusals } from './agent-refusal.js';

export function pmiHandlers(exchange: FenceExchange, jobs: JobManager, refusals: AgentRefusals): Array<[string, AgentHandler]> {
  return [
    ['pmi.fence', (conn, m) => exchange.fence(conn.name!, m as unknown as PmiFence)],
    ['pmi.fetch', (conn, m) => exchange.fetch(conn.name!, m as unknown as PmiFetch)],
    [
      'pmi.failed',
      (conn, raw) => {
        const m = raw as unknown as PmiFailed;
        const owner = jobs.live.get(m.jobId)?.ranks[m.rank]?.node;
        if (owner !== undefined && owner !== conn.name) {
          refusals.foreignRank(conn.name!, m.type, m.jobId, m.rank);
          return;
        }
        jobs.lifecycle.pmiFailed(conn.name!, m);
      },
    ],
  ];
}
