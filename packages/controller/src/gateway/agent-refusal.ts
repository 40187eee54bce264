// Refusing what an enrolled node may not do (docs/security.md, "Agent messages"): a node
// that asks about a job it has no part in, or asks for what only another node may, is
// either broken or an impostor. It gets an error frame with a stable code, the refusal is
// logged and audited under the node's name, and nothing is relayed or changed.
import type { Logger } from 'pino';
import type { AuditLog } from '../store/audit-log.js';
import type { AgentConnection } from './agent-connection.js';

export interface AgentRefusal {
  /** The message type refused. */
  type: string;
  code: string;
  message: string;
  /** What it was about: job id, daemon, host… (strings, as the audit log keeps them). */
  resource?: Record<string, string>;
}

export class AgentRefusals {
  constructor(
    private readonly audit: AuditLog,
    private readonly log: Logger,
  ) {}

  refuse(conn: Pick<AgentConnection, 'name' | 'remoteAddress' | 'send'>, r: AgentRefusal): void {
    const node = conn.name ?? '?';
    this.log.warn({ node, address: conn.remoteAddress, code: r.code, type: r.type, ...r.resource }, `refused agent message: ${r.message}`);
    try {
      this.audit.record(
        {
          user: null,
          role: 'node',
          accessor: null,
          source: conn.remoteAddress ?? 'unknown',
          method: 'WS',
          route: r.type,
          resource: { node, ...r.resource },
          decision: 'deny',
          reason: `${r.code}: ${r.message}`,
        },
        { status: 403, durationMs: null },
      );
    } catch (err) {
      // the refusal stands either way: nothing was relayed
      this.log.error({ err, node }, 'cannot audit a refused agent message');
    }
    conn.send({ type: 'error', code: r.code, message: r.message, inReplyTo: r.type });
  }
}
