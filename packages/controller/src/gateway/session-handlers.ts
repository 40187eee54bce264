// Handlers of the session messages that follow the hello.
import type { Logger } from 'pino';
import type { NodeRegistry } from '../nodes/node-registry.js';
import type { AgentHandlers } from './agent-handlers.js';

export function sessionHandlers(registry: NodeRegistry, log: Logger): AgentHandlers {
  return {
    heartbeat: (conn) => registry.heartbeat(conn.name),
    facts: (conn, m) => registry.updateFacts(conn.name, m.facts, m.hash),
    error: (conn, m) =>
      log.warn({ node: conn.name, code: m.code, inReplyTo: m.inReplyTo }, `agent refused a frame: ${m.message}`),
  };
}
