// Splitting a node's allowed cores into one share per local rank.
//
// The rules, in order:
// - one rank per NUMA node / package / GPU: each rank takes that domain (ranks of GPUs
//   on the same NUMA node split its cores);
// - otherwise, when the ranks spread evenly over the NUMA nodes (or the packages), each
//   domain's cores are split among its ranks, so that no rank straddles two domains;
// - otherwise, even shares that happen to fit inside domains are placed there;
// - otherwise, even shares in core order.
// Within a domain the split is torch's `exclusive` rule: equal shares, the remainder
// going to the lowest local ranks.
//
// More ranks than cores is an error unless the spec says --oversubscribe (mpirun's
// word): then each rank gets one core, consecutive local ranks sharing it, so that
// ranks stay pinned and the binding stays verifiable.
import { PlanErrorCode } from '@rankd/protocol';
import { PlanError } from './errors.js';
import type { Domain, NodeTopology, TopoCore } from './topology.js';
import { plural } from '@rankd/protocol/plural';

export type ShareMode =
  | { kind: 'count' }
  | { kind: 'numa' }
  | { kind: 'socket' }
  /** NUMA node of each local rank's GPU, null when unknown. */
  | { kind: 'gpu'; gpuNuma: readonly (number | null)[] };

/** n items over r takers: floor(n/r) each, one more for the first n mod r. */
export function exclusiveSizes(n: number, r: number): number[] {
  const base = Math.floor(n / r);
  const rem = n % r;
  return Array.from({ length: r }, (_, i) => base + (i < rem ? 1 : 0));
}

export function splitShares(
  topo: NodeTopology,
  ranks: number,
  mode: ShareMode,
  node: string,
  oversubscribe = false,
  /** What leaves the node fewer allowed CPUs than it has (cpusetNote), for refusals. */
  cpusetNote: string | null = null,
): TopoCore[][] {
  if (topo.cores.length === 0) {
    throw new PlanError(
      PlanErrorCode.NoCpus,
      `no allowed CPU (${cpusetNote ?? 'the cgroup cpuset or offline CPUs leave none'})`,
      { node },
    );
  }
  if (ranks > topo.cores.length && oversubscribe && mode.kind === 'count') return sharedCores(topo.cores, ranks);
  if (ranks > topo.cores.length) {
    throw new PlanError(
      PlanErrorCode.TooManyRanks,
      `${plural(ranks, 'rank')} but only ${plural(topo.cores.length, 'allowed core')} (${cpusetNote ? `${cpusetNote}; ` : ''}--oversubscribe lets ranks share cores)`,
      {
        node,
        suggestion: { ranksPerNode: topo.cores.length },
      },
    );
  }
  switch (mode.kind) {
    case 'numa':
      return byDomain(
        topo.numaDomains,
        ranks,
        { one: 'NUMA node with allowed cores', many: 'NUMA nodes with allowed cores' },
        node,
        cpusetNote,
      );
    case 'socket':
      return byDomain(
        topo.packageDomains,
        ranks,
        { one: 'package with allowed cores', many: 'packages with allowed cores' },
        node,
        cpusetNote,
      );
    case 'gpu':
      return byGpuDomain(topo, mode.gpuNuma, node, cpusetNote) ?? evenShares(topo, ranks);
    case 'count':
      return evenShares(topo, ranks);
  }
}

/** Oversubscribed: rank r on core floor(r × cores / ranks), so neighbours share. */
function sharedCores(cores: readonly TopoCore[], ranks: number): TopoCore[][] {
  return Array.from({ length: ranks }, (_, r) => [cores[Math.floor((r * cores.length) / ranks)]!]);
}

function byDomain(
  domains: readonly Domain[],
  ranks: number,
  what: { one: string; many: string },
  node: string,
  cpusetNote: string | null,
): TopoCore[][] {
  if (ranks > domains.length) {
    throw new PlanError(
      PlanErrorCode.TooManyRanks,
      `${plural(ranks, 'rank')} but only ${plural(domains.length, what.one, what.many)}${cpusetNote ? ` (${cpusetNote})` : ''}`,
      {
        node,
        suggestion: { ranksPerNode: domains.length },
      },
    );
  }
  return domains.slice(0, ranks).map((d) => [...d.cores]);
}

/** Ranks grouped by their GPU's NUMA node; null when some GPU's node has no allowed core. */
function byGpuDomain(
  topo: NodeTopology,
  gpuNuma: readonly (number | null)[],
  node: string,
  cpusetNote: string | null,
): TopoCore[][] | null {
  const domainOf = new Map(topo.numaDomains.map((d) => [d.id, d]));
  const ranksOf = new Map<number, number[]>();
  for (let r = 0; r < gpuNuma.length; r++) {
    const id = gpuNuma[r];
    if (id === null || id === undefined || !domainOf.has(id)) return null;
    let list = ranksOf.get(id);
    if (!list) ranksOf.set(id, (list = []));
    list.push(r);
  }
  const shares: TopoCore[][] = new Array(gpuNuma.length);
  for (const [id, localRanks] of ranksOf) {
    const cores = domainOf.get(id)!.cores;
    if (localRanks.length > cores.length) {
      throw new PlanError(
        PlanErrorCode.TooManyRanks,
        `${localRanks.length} GPU ranks on NUMA node ${id}, which has only ${cores.length} allowed cores${cpusetNote ? ` (${cpusetNote})` : ''}`,
        { node },
      );
    }
    const parts = splitInOrder(cores, exclusiveSizes(cores.length, localRanks.length));
    localRanks.forEach((r, i) => (shares[r] = parts[i]!));
  }
  return shares;
}

function evenShares(topo: NodeTopology, ranks: number): TopoCore[][] {
  for (const domains of [topo.numaDomains, topo.packageDomains]) {
    if (domains.length < 2) continue;
    if (ranks % domains.length === 0 && domains.every((d) => d.cores.length >= ranks / domains.length)) {
      const per = ranks / domains.length;
      return domains.flatMap((d) => splitInOrder(d.cores, exclusiveSizes(d.cores.length, per)));
    }
  }
  const sizes = exclusiveSizes(topo.cores.length, ranks);
  for (const domains of [topo.numaDomains, topo.packageDomains]) {
    if (domains.length < 2) continue;
    const fitted = fitInDomains(domains, sizes);
    if (fitted) return fitted;
  }
  return splitInOrder(topo.cores, sizes);
}

/** Places each share wholly inside one domain, walking domains in order; null if one does not fit. */
function fitInDomains(domains: readonly Domain[], sizes: readonly number[]): TopoCore[][] | null {
  const out: TopoCore[][] = [];
  let d = 0;
  let used = 0;
  for (const size of sizes) {
    while (d < domains.length && size > domains[d]!.cores.length - used) {
      d++;
      used = 0;
    }
    if (d === domains.length) return null;
    out.push(domains[d]!.cores.slice(used, used + size));
    used += size;
  }
  return out;
}

function splitInOrder(cores: readonly TopoCore[], sizes: readonly number[]): TopoCore[][] {
  const out: TopoCore[][] = [];
  let at = 0;
  for (const size of sizes) {
    out.push(cores.slice(at, at + size));
    at += size;
  }
  return out;
}
