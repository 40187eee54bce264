// Splits the hosts a pattern selected into those an operation can reach and those it
// reports without trying: no agent, agent not connected, agent too old.
import { FleetErrorCode, type MatchedHost } from '@rankd/protocol';
import type { NodeRegistry } from '../../nodes/node-registry.js';

export interface ReadyTarget {
  host: string;
  node: string;
}

export interface SkippedTarget {
  host: string;
  node: string | null;
  status: 'UNREACHABLE' | 'FAILED';
  error: { code: string; message: string };
}

export function partitionTargets(
  hosts: readonly MatchedHost[],
  registry: NodeRegistry,
  capability: string,
): { ready: ReadyTarget[]; skipped: SkippedTarget[] } {
  const ready: ReadyTarget[] = [];
  const skipped: SkippedTarget[] = [];
  for (const h of hosts) {
    if (h.node === null || h.agent === 'none') {
      skipped.push({
        host: h.host,
        node: h.node,
        status: 'UNREACHABLE',
        error: { code: FleetErrorCode.NoAgent, message: 'no agent has registered for this host' },
      });
      continue;
    }
    const node = registry.get(h.node);
    if (!node || h.agent !== 'ready' || !registry.link(h.node)) {
      const why =
        node?.state === 'ready'
          ? 'its agent is not connected'
          : `its agent is ${node?.state ?? 'unknown'}${node?.stateReason ? ` (${node.stateReason})` : ''}`;
      skipped.push({
        host: h.host,
        node: h.node,
        status: 'UNREACHABLE',
        error: { code: FleetErrorCode.AgentUnreachable, message: why },
      });
      continue;
    }
    if (!node.capabilities.includes(capability)) {
      skipped.push({
        host: h.host,
        node: h.node,
        status: 'FAILED',
        error: {
          code: FleetErrorCode.MissingCapability,
          message: `agent ${node.version ?? '(unknown version)'} has no "${capability}" capability; upgrade it`,
        },
      });
      continue;
    }
    ready.push({ host: h.host, node: h.node });
  }
  return { ready, skipped };
}

/** Turns a rejected request into the error of a per-host result. */
export function failureOf(err: unknown): { code: string; message: string } {
  const e = err as { code?: unknown; message?: unknown };
  return {
    code: typeof e.code === 'string' ? e.code : FleetErrorCode.AgentUnreachable,
    message: typeof e.message === 'string' ? e.message : String(err),
  };
}
