// Agent messages of the PMI exchange, routed to the fence and to the job lifecycle.
import type { PmiFailed, PmiFence, PmiFetch } from '@rankd/protocol';
import type { JobManager } from '../jobs/job-manager.js';
import type { FenceExchange } from '../pmi/fence-exchange.js';
import type { AgentHandler } from './agent-connection.js';

export function pmiHandlers(exchange: FenceExchange, jobs: JobManager): Array<[string, AgentHandler]> {
  return [
    ['pmi.fence', (conn, m) => exchange.fence(conn.name!, m as unknown as PmiFence)],
    ['pmi.fetch', (conn, m) => exchange.fetch(conn.name!, m as unknown as PmiFetch)],
    ['pmi.failed', (conn, m) => jobs.pmiFailed(conn.name!, m as unknown as PmiFailed)],
  ];
}
