// The CPU side of one node's plan: shares, compute and worker CPUs, and the NUMA nodes
// they sit on, for a given topology and rank count. This is the costly part, and a
// cluster has few distinct topologies, so plans are cached under the topology key.
import type { PlacementSpec, RankCpuPolicy } from '@rankd/protocol';
import { bindShare, type CpuPolicy, type RankCpus } from './cpu-binding.js';
import { splitShares, type ShareMode } from './cpu-shares.js';
import type { NodeTopology } from './topology.js';
import { plural } from '@rankd/protocol/plural';

export interface RankCpuPlan extends RankCpus {
  /** NUMA nodes of the rank's compute and worker CPUs. */
  numas: number[];
}

export interface NodeCpuPlan {
  ranks: RankCpuPlan[];
  /** Every local rank's worker CPUs, in local-rank order (CCL_WORKER_AFFINITY). */
  workerAffinity: string;
  notes: string[];
}

export class CpuPlanCache {
  private readonly plans = new Map<string, NodeCpuPlan>();

  constructor(
    private readonly spec: PlacementSpec,
    private readonly cpus: RankCpuPolicy,
  ) {}

  /**
   * `cpusetNote` says why the node has fewer allowed CPUs than CPUs, for refusals only: it
   * is the node's own (nodes of one topology may differ in it), so it is not in the key.
   */
  planFor(topo: NodeTopology, ranks: number, mode: ShareMode, node: string, cpusetNote: string | null): NodeCpuPlan {
    const key = `${topo.key}|${ranks}|${mode.kind === 'gpu' ? mode.gpuNuma.join(',') : mode.kind}`;
    let plan = this.plans.get(key);
    if (!plan) {
      const policy = { ...this.policyFor(topo), cpusetNote };
      plan = planNodeCpus(topo, ranks, mode, policy, node, this.spec.oversubscribe === true);
      this.plans.set(key, plan);
    }
    return plan;
  }

  private policyFor(topo: NodeTopology): CpuPolicy {
    return {
      cpusPerRank: this.cpus.cpusPerRank ?? undefined,
      fromSite: this.cpus.applied === 'site',
      ht: this.spec.ht ?? 'first',
      commWorkers: this.spec.commWorkers ?? 0,
      // siblings are free CPUs only where there are hyperthreads
      commOn: this.spec.commOn ?? (topo.hasSiblings ? 'siblings' : 'cores'),
    };
  }
}

function planNodeCpus(
  topo: NodeTopology,
  ranks: number,
  mode: ShareMode,
  policy: CpuPolicy,
  node: string,
  oversubscribe: boolean,
): NodeCpuPlan {
  const shares = splitShares(topo, ranks, mode, node, oversubscribe, policy.cpusetNote ?? null);
  const numaOfCpu = topo.numaOfCpu;
  const notes: string[] = [];
  if (ranks > topo.cores.length) {
    notes.push(
      `oversubscribed: ${plural(ranks, 'rank')} on ${plural(topo.cores.length, 'core')}, up to ${plural(Math.ceil(ranks / topo.cores.length), 'rank')} per core`,
    );
  }
  const plans = shares.map((share, localRank) => {
    const cpus = bindShare(share, policy, node, localRank);
    const numas = new Set<number>();
    for (const cpu of cpus.cpus) numas.add(numaOfCpu.get(cpu) ?? -1);
    for (const cpu of cpus.commCpus) numas.add(numaOfCpu.get(cpu) ?? -1);
    numas.delete(-1);
    const sorted = [...numas].sort((a, b) => a - b);
    if (sorted.length > 1 && topo.numaDomains.length > 1) {
      notes.push(`local rank ${localRank} spans NUMA nodes ${sorted.join(',')}`);
    }
    return { ...cpus, numas: sorted };
  });
  return {
    ranks: plans,
    workerAffinity: plans.flatMap((p) => p.commCpus).join(','),
    notes,
  };
}
