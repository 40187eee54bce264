// Agent messages about ranks, routed to the job lifecycle.
import type { RankExit, RankOutput, RankStarted, RanksReport } from '@rankd/protocol';
import type { RankEvents } from '../jobs/rank-events.js';
import type { AgentHandler } from './agent-connection.js';

export function jobHandlers(events: RankEvents): Array<[string, AgentHandler]> {
  return [
    ['rank.started', (conn, m) => events.started(conn.name!, m as unknown as RankStarted)],
    ['rank.output', (conn, m, payload) => events.output(conn.name!, m as unknown as RankOutput, payload!)],
    ['rank.exit', (conn, m) => events.exit(conn.name!, m as unknown as RankExit)],
    ['ranks.report', (conn, m) => events.report(conn.name!, m as unknown as RanksReport)],
  ];
}
