// Per-node gauges of /metrics: each node's hardware as its agent last reported it, and the
// ranks it runs now. Read from the registry and the live jobs at scrape time, like the
// fleet-wide gauges, with one series per known node and gauge: every gauge is reset before
// it is filled, so a node removed from the registry leaves the output at the next scrape
// and the number of series stays the size of the fleet.
import { Gauge, type Registry } from 'prom-client';
import type { Facts } from '@rankd/protocol';
import type { NodeRegistry } from '../nodes/node-registry.js';
import { isTerminal, type JobManager } from '../jobs/job-manager.js';

interface FactGauge {
  name: string;
  help: string;
  /** null: the agent could not read it, and the node gets no series rather than a false 0. */
  value: (facts: Facts) => number | null;
}

/** The counts `rankd nodes` and the planner go by: the allowed view (the agent's cpuset), not the whole machine. */
const FACT_GAUGES: readonly FactGauge[] = [
  {
    name: 'rankd_node_cpus',
    help: "Logical CPUs (hardware threads) the node gives ranks: its agent's cpuset, as `rankd nodes` shows.",
    value: (f) => f.cpu.pus,
  },
  { name: 'rankd_node_cores', help: 'Physical cores holding those CPUs.', value: (f) => f.cpu.cores },
  {
    name: 'rankd_node_numa_nodes',
    help: 'NUMA nodes of the node, as `rankd nodes` shows.',
    value: (f) => f.numa.nodes.length,
  },
  {
    name: 'rankd_node_memory_bytes',
    help: 'Memory of the node (MemTotal).',
    value: (f) => (f.memory.totalKb === null ? null : f.memory.totalKb * 1024),
  },
  { name: 'rankd_node_gpus', help: "GPUs found on the node's PCI bus.", value: (f) => f.gpus.length },
  {
    name: 'rankd_node_nics',
    help: 'Network interfaces backed by a device (loopback, bridges, veths and other virtual ones left out).',
    value: (f) => f.nics.filter((n) => !n.virtual).length,
  },
  {
    name: 'rankd_node_rdma_ports',
    help: "Ports of the node's RDMA devices, whatever their state.",
    value: (f) => f.rdma.devices.reduce((n, d) => n + d.ports.length, 0),
  },
];

export function registerNodeGauges(registry: Registry, nodes: NodeRegistry, jobs: JobManager): void {
  const registers = [registry];
  for (const { name, help, value } of FACT_GAUGES) {
    new Gauge({
      name,
      help: `${help} From the facts its agent last reported, by node.`,
      labelNames: ['node'],
      registers,
      collect() {
        this.reset();
        for (const n of nodes.factsByNode()) {
          const v = n.facts ? value(n.facts) : null;
          if (v !== null) this.set({ node: n.name }, v);
        }
      },
    });
  }
  new Gauge({
    name: 'rankd_node_ranks_live',
    help: 'Ranks of live jobs on the node that have not ended, by node (0 for an idle node).',
    labelNames: ['node'],
    registers,
    collect() {
      const count = new Map<string, number>();
      for (const n of nodes.factsByNode()) count.set(n.name, 0);
      for (const live of jobs.live.values()) {
        for (const r of live.ranks) if (!isTerminal(r) && count.has(r.node)) count.set(r.node, count.get(r.node)! + 1);
      }
      this.reset();
      for (const [node, n] of count) this.set({ node }, n);
    },
  });
}
