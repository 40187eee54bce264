// Refusing what an enrolled node may not do (docs/security.md, "Agent messages"): a node
// that asks about a job it has no part in, or asks for what only another node may, is
// either broken or an impostor. It gets an error frame with a stable code, the refusal is
// logged and audited under the node's name, and nothing is relayed or changed.
//
// A node repeating itself must not flood the audit log: one entry per node, message type
// and code a minute; the next entry after that minute counts the refusals it stood for.
import type { Logger } from 'pino';
import type { NodeRegistry } from '../fleet/node-registry.js';
import type { AgentSender } from '../jobs/job-manager.js';
import type { AuditLog } from '../store/audit-log.js';

export interface AgentRefusal {
  /** The message type refused. */
  type: string;
  code: string;
  message: string;
  /** What it was about: job id, rank, daemon, host… (strings, as the audit log keeps them). */
  resource?: Record<string, string>;
}

/** One audit entry per node, type and code within this window. */
const AUDIT_WINDOW_MS = 60_000;
/** Windows kept before the expired ones are swept. */
const MAX_WINDOWS = 10_000;

export class AgentRefusals {
  private readonly windows = new Map<string, { until: number; repeats: number }>();

  constructor(
    private readonly audit: AuditLog,
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
    const repeats = this.repeatsBefore(`${node}\0${r.type}\0${r.code}`);
    if (repeats === null) return;
    try {
      this.audit.record(
        {
          user: null,
          role: 'node',
          accessor: null,
          source: address ?? 'unknown',
          method: 'WS',
          route: r.type,
          resource: { node, ...r.resource },
          decision: 'deny',
          reason: `${r.code}: ${r.message}${repeats ? ` (and ${repeats} more refusals like it after the last entry)` : ''}`,
        },
        { status: 403, durationMs: null },
      );
    } catch (err) {
      // the refusal stands either way: nothing was relayed
      this.log.error({ err, node }, 'cannot audit a refused agent message');
    }
  }

  /** null while this kind of refusal was audited less than a minute ago (counted); else how many came since its last entry. */
  private repeatsBefore(key: string): number | null {
    const now = Date.now();
    const window = this.windows.get(key);
    if (window && now < window.until) {
      window.repeats++;
      return null;
    }
    if (this.windows.size >= MAX_WINDOWS) for (const [k, w] of this.windows) if (now >= w.until) this.windows.delete(k);
    this.windows.set(key, { until: now + AUDIT_WINDOW_MS, repeats: 0 });
    return window?.repeats ?? 0;
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
