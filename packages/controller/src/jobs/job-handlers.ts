// Agent messages about ranks, routed to the job lifecycle.
import type { RankEvents } from './rank-events.js';
import type { AgentHandlers } from '../gateway/agent-handlers.js';

export function jobHandlers(events: RankEvents): AgentHandlers {
  return {
    'rank.started': (conn, m) => events.started(conn.name, m),
    'rank.output': (conn, m, payload) => events.output(conn.name, m, payload),
    'rank.exit': (conn, m) => events.exit(conn.name, m),
    'ranks.report': (conn, m) => events.report(conn.name, m),
  };
}
