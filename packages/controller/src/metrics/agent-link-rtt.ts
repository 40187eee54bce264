// The round trip of each agent's link, timed by the gateway's liveness pings (one a TTL per
// link: 15 s by default, scaled by --heartbeat-ms). A histogram for the fleet, and the last
// round trip of each connected node for finding the slow one; that gauge is rebuilt from
// the registry at every scrape, so a node that disconnects or is removed drops out of it.
import { Gauge, Histogram, type Registry } from 'prom-client';
import type { NodeRegistry } from '../nodes/node-registry.js';

export class AgentLinkRtt {
  private readonly rtt: Histogram;
  /** Last round trip by node name; pruned to the registry's nodes at every scrape. */
  private readonly last = new Map<string, number>();

  constructor(registry: Registry, nodes: NodeRegistry) {
    const registers = [registry];
    this.rtt = new Histogram({
      name: 'rankd_agent_link_rtt_seconds',
      help: "Round trip of a WebSocket ping to an agent and its pong: network, TLS and both ends' event loops.",
      // a LAN link answers in well under a millisecond; the high buckets catch a stalled event loop
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    const last = this.last;
    new Gauge({
      name: 'rankd_agent_link_last_rtt_seconds',
      help: 'The last ping round trip of each connected agent, by node.',
      labelNames: ['node'],
      registers,
      collect() {
        this.reset();
        const known = new Set<string>();
        for (const n of nodes.factsByNode()) {
          known.add(n.name);
          const seconds = last.get(n.name);
          if (n.connected && seconds !== undefined) this.set({ node: n.name }, seconds);
        }
        for (const name of last.keys()) if (!known.has(name)) last.delete(name);
      },
    });
  }

  observe(node: string, seconds: number): void {
    this.rtt.observe(seconds);
    this.last.set(node, seconds);
  }
}
