// Refusing what an enrolled node may not do (docs/security.md, "Agent messages"): a node
// that asks about a job it has no part in, or asks for what only another node may, is
// either broken or an impostor. It gets an error frame with a stable code, the refusal is
// logged and audited under the node's name, and nothing is relayed or changed.
//
// A node repeating itself must not flood the audit log: its refusals are counted like every
// refusal anyone can cause (store/audit-refusals.ts), one entry per node, link address, code
// and minute whose `count` grows; the message types it stands for are its route(s).
import { ErrorCode } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { NodeRegistry } from '../nodes/node-registry.js';
import type { AgentSender } from './agent-sender.js';
import type { AuditLog } from '../store/audit-log.js';

export interface AgentRefusal {
  /** The message type refused. */
  type: string;
  code: string;
  message: string;
  /** What it was about: job id, rank, daemon, host… (strings, as the audit log keeps them). */
  resource?: Record<string, string>;
}

export class AgentRefusals {
  constructor(
    private readonly audit: Pick<AuditLog, 'countRefusal'>,
    private readonly agents: AgentSender,
    private readonly registry: Pick<NodeRegistry, 'link'>,
    private readonly log: Logger,
  ) {}

  /** Refuses `node`'s message: error frame, log line, audit entry. */
  refuse(node: string, r: AgentRefusal): void {
    // the address the link comes from, as the controller sees it (not the hello's claim)
    const address = this.registry.link(node)?.remoteAddress ?? null;
    this.log.warn({ node, address, code: r.code, type: r.type, ...r.resource }, `refused agent message: ${r.message}`);
    this.tell(node, r);
    this.audit.countRefusal({
      source: address ?? 'unknown',
      user: node,
      role: 'node',
      method: 'WS',
      route: r.type,
      status: 403,
      code: r.code,
      reason: r.message,
      resource: { node, ...r.resource },
    });
  }

  /** `node` spoke about a rank the rank map puts on another node: never legitimate (a misconfigured name, or an impostor). */
  foreignRank(node: string, type: string, jobId: string, rank: number): void {
    this.refuse(node, {
      type,
      code: ErrorCode.ForeignRank,
      message: `rank ${rank} of job ${jobId} does not run on ${node}`,
      resource: { job: jobId, rank: String(rank) },
    });
  }

  /**
   * A message about a job that is no longer live: a node's late report is ordinary after a
   * job ends (its daemons or ranks ending after it), so it is told and logged, not audited.
   */
  stale(node: string, r: AgentRefusal): void {
    this.log.info({ node, code: r.code, type: r.type, ...r.resource }, `agent message about no live job: ${r.message}`);
    this.tell(node, r);
  }

  private tell(node: string, r: AgentRefusal): void {
    this.agents.send(node, { type: 'error', code: r.code, message: r.message, inReplyTo: r.type });
  }
}
