// `rankd ping`: one round trip to each selected agent over its open link, timed at the
// controller. Like `ansible -m ping`, but with the latency and without ssh.
import type { FleetPong, PingHostResult, PingReport, PingRequest } from '@rankd/protocol';
import type { FleetInventory } from '../inventory/inventory-service.js';
import type { NodeRegistry } from '../../nodes/node-registry.js';
import type { AgentRequests } from '../exec/agent-requests.js';
import { failureOf, partitionTargets } from '../exec/targets.js';

export const DEFAULT_PING_TIMEOUT_S = 10;

export class PingService {
  constructor(
    private readonly inventory: FleetInventory,
    private readonly registry: NodeRegistry,
    private readonly requests: AgentRequests,
  ) {}

  async run(req: PingRequest): Promise<PingReport> {
    const hosts = this.inventory.resolve(req.pattern);
    const { ready, skipped } = partitionTargets(hosts, this.registry, 'ping');
    const timeoutMs = Math.round((req.timeout ?? DEFAULT_PING_TIMEOUT_S) * 1000);
    const results = new Map<string, PingHostResult>();
    for (const s of skipped)
      results.set(s.host, { host: s.host, node: s.node, status: 'UNREACHABLE', latencyMs: null, error: s.error });
    await Promise.all(
      ready.map(async (t) => {
        const sent = performance.now();
        try {
          await this.requests.request<FleetPong & { type: string }>(
            t.node,
            { type: 'fleet.ping' },
            'fleet.pong',
            timeoutMs,
          );
          const latencyMs = Math.round((performance.now() - sent) * 100) / 100;
          results.set(t.host, { host: t.host, node: t.node, status: 'SUCCESS', latencyMs, error: null });
        } catch (err) {
          results.set(t.host, {
            host: t.host,
            node: t.node,
            status: 'UNREACHABLE',
            latencyMs: null,
            error: failureOf(err),
          });
        }
      }),
    );
    const ordered = hosts.map((h) => results.get(h.host)!);
    const success = ordered.filter((r) => r.status === 'SUCCESS').length;
    return {
      pattern: req.pattern,
      hosts: ordered,
      summary: { success, failed: 0, unreachable: ordered.length - success },
    };
  }
}
