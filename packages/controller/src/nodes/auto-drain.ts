// Auto-drain (`rankd controller --exclude-after K`): a node that failed K attempts, of any
// jobs, within an hour is drained by the controller itself, as toil#5452 asks ("one bad
// node can consume all your retries in under a minute"). A job already leaves such a node
// out of its own next attempts (jobs/restart-policy.ts); this keeps every other job off it
// too, until an operator has looked and runs `rankd node resume`.
//
// It drains through the registry's drain, as `rankd node drain` does: the same `node.drained`
// event, the same stored drain that survives a restart, and an audit entry, with the
// controller as the actor. Only failures after the node's last resume count, so a resumed
// node is not drained again by the failures that drained it.
import { DRAIN_REASON_CHARS } from '@rankd/protocol/limits';
import type { Logger } from 'pino';
import type { AuditLog } from '../store/audit-log.js';
import type { NodeRegistry } from './node-registry.js';

/** How far back failures count. */
export const AUTO_DRAIN_WINDOW_MS = 3_600_000;
export const DEFAULT_EXCLUDE_AFTER = 2;
/** Who an auto-drain names as its actor (the drain's `by`, the audit entry's source). */
export const AUTO_DRAIN_ACTOR = 'controller';
/** The REST bound on a drain's reason (protocol's DRAIN_REASON_CHARS): an auto-drain keeps within it too. */
const MAX_REASON_CHARS = DRAIN_REASON_CHARS.max;

/** A node that failed an attempt (jobs/attempts-repo.ts NodeFailure: nodes/ does not import jobs/). */
export interface NodeFailureRecord {
  node: string;
  at: number;
  jobId: string;
  attempt: number;
  reason: string;
}

export interface AutoDrainDeps {
  /** A node's recorded failures at or after `since`, oldest first. */
  failuresSince(node: string, since: number): NodeFailureRecord[];
  /** When the node was last resumed (its newest `node.resumed` event), or null. */
  lastResumed(node: string): number | null;
  registry: Pick<NodeRegistry, 'get' | 'drain'>;
  audit: Pick<AuditLog, 'record'>;
  log: Logger;
  /** Told after each auto-drain (the metrics count them). */
  drained?: (node: string) => void;
  now?: () => number;
}

export class AutoDrain {
  private readonly now: () => number;

  /** `excludeAfter` is K, at least 1 (0, "off", is the caller's not to construct one). */
  constructor(
    private readonly excludeAfter: number,
    private readonly deps: AutoDrainDeps,
  ) {
    this.now = deps.now ?? Date.now;
  }

  /** Nodes failed an attempt (JobManager's `nodesFailed`): each one that now has K failures is drained. */
  nodesFailed(failures: readonly Pick<NodeFailureRecord, 'node'>[]): void {
    for (const node of new Set(failures.map((f) => f.node))) this.judge(node);
  }

  private judge(node: string): void {
    const known = this.deps.registry.get(node);
    // an operator's drain, or an earlier auto-drain, stands as it is
    if (!known || known.drain) return;
    const failed = this.countedFailures(node);
    if (failed.length < this.excludeAfter) return;
    const reason = drainReason(failed);
    try {
      // an act the audit log does not hold does not happen (store/audit-log.ts)
      this.deps.audit.record(
        {
          user: null,
          role: null,
          accessor: null,
          source: AUTO_DRAIN_ACTOR,
          method: 'AUTO',
          route: '/v1/nodes/:name/drain',
          resource: { node },
          decision: 'allow',
          reason,
        },
        { status: 200, durationMs: null },
      );
    } catch (err) {
      this.deps.log.error({ err, node, reason }, 'auto-drain: cannot write the audit entry; the node is not drained');
      return;
    }
    this.deps.registry.drain(node, reason, AUTO_DRAIN_ACTOR);
    this.deps.drained?.(node);
  }

  /** The node's failures within the window and after its last resume, one per attempt. */
  private countedFailures(node: string): NodeFailureRecord[] {
    const resumed = this.deps.lastResumed(node);
    const since = Math.max(this.now() - AUTO_DRAIN_WINDOW_MS, resumed === null ? 0 : resumed + 1);
    const byAttempt = new Map<string, NodeFailureRecord>();
    for (const f of this.deps.failuresSince(node, since)) byAttempt.set(`${f.jobId}/${f.attempt}`, f);
    return [...byAttempt.values()];
  }
}

/**
 * "auto-drained: failed 2 attempts within an hour (job j1: node n2 lost; job j2 attempt 1:
 * rank 3 on n2 was killed by SIGBUS)", cut to the REST bound on a drain's reason.
 */
export function drainReason(failed: readonly NodeFailureRecord[]): string {
  const each = failed.map((f) => `job ${f.jobId}${f.attempt > 0 ? ` attempt ${f.attempt}` : ''}: ${f.reason}`);
  const text = `auto-drained: failed ${failed.length} attempts within an hour (${each.join('; ')})`;
  return text.length <= MAX_REASON_CHARS ? text : `${text.slice(0, MAX_REASON_CHARS - 2)}…)`;
}
