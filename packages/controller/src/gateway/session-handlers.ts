// Handlers of the session messages that follow the hello.
import type { ErrorMessage, FactsUpdate } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { NodeRegistry } from '../nodes/node-registry.js';
import type { AgentHandler } from './agent-connection.js';

export function sessionHandlers(registry: NodeRegistry, log: Logger): Array<[string, AgentHandler]> {
  return [
    ['heartbeat', (conn) => registry.heartbeat(conn.name!)],
    [
      'facts',
      (conn, message) => {
        const update = message as unknown as FactsUpdate;
        registry.updateFacts(conn.name!, update.facts, update.hash);
      },
    ],
    [
      'error',
      (conn, message) => {
        const err = message as unknown as ErrorMessage;
        log.warn({ node: conn.name, code: err.code, inReplyTo: err.inReplyTo }, `agent refused a frame: ${err.message}`);
      },
    ],
  ];
}
