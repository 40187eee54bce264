// Agent messages of the PMI exchange, routed to the fence and to the job lifecycle.
import type { JobManager } from './job-manager.js';
import type { FenceExchange } from '../pmi/fence-exchange.js';
import type { AgentHandlers } from '../gateway/agent-handlers.js';
import type { AgentRefusals } from '../gateway/agent-refusal.js';

export function pmiHandlers(exchange: FenceExchange, jobs: JobManager, refusals: AgentRefusals): AgentHandlers {
  return {
    'pmi.fence': (conn, m) => exchange.fence(conn.name, m),
    'pmi.fetch': (conn, m) => exchange.fetch(conn.name, m),
    'pmi.failed': (conn, m) => {
      const owner = jobs.lifecycle.attempt(m.jobId)?.ranks[m.rank]?.node;
      if (owner !== undefined && owner !== conn.name) {
        refusals.foreignRank(conn.name, m.type, m.jobId, m.rank);
        return;
      }
      jobs.lifecycle.pmiFailed(conn.name, m);
    },
  };
}
