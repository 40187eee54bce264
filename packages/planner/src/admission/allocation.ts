// What a job holds on each node while it runs: whole cores (every allowed hardware
// thread of each core its ranks compute or run comm workers on) and GPUs.
//
// Cores, not threads, are the unit, as in Slurm's CR_Core: two jobs on sibling threads
// of one core would slow each other as surely as on one thread. An --exclusive job
// holds every CPU and GPU of its nodes; a --share job holds nothing (it overlaps by
// request), but is still recorded on its nodes so that --exclusive jobs wait for it.
import type { Facts, PlacementSpec, RankMap } from '@rankd/protocol';
import { allowedGpus } from '../gpus.js';
import { topologyOf } from '../topology.js';

export type AllocationMode = 'normal' | 'exclusive' | 'share';

export interface NodeAllocation {
  /** Every allowed hardware thread of the held cores, ascending. */
  cpus: number[];
  gpus: number[];
}

export interface Allocation {
  mode: AllocationMode;
  nodes: Record<string, NodeAllocation>;
}

export function allocationMode(spec: PlacementSpec): AllocationMode {
  return spec.exclusive ? 'exclusive' : spec.share ? 'share' : 'normal';
}

/** The allocation of a rank map planned for `spec`; `factsOf` gives each node's facts. */
export function allocationOf(rankMap: RankMap, spec: PlacementSpec, factsOf: (node: string) => Facts): Allocation {
  const mode = allocationMode(spec);
  const nodes: Record<string, NodeAllocation> = {};
  const ranksOf = new Map<string, RankMap['ranks']>();
  for (const r of rankMap.ranks) {
    let list = ranksOf.get(r.node);
    if (!list) ranksOf.set(r.node, (list = []));
    list.push(r);
  }
  for (const [node, ranks] of ranksOf) {
    if (mode === 'share') {
      nodes[node] = { cpus: [], gpus: [] };
      continue;
    }
    const facts = factsOf(node);
    const topo = topologyOf(facts);
    if (mode === 'exclusive') {
      nodes[node] = {
        cpus: topo.cores.flatMap((c) => c.pus).sort((a, b) => a - b),
        gpus: allowedGpus(facts).map((g) => g.index),
      };
      continue;
    }
    const coreOf = new Map<number, readonly number[]>();
    for (const core of topo.cores) for (const pu of core.pus) coreOf.set(pu, core.pus);
    const cpus = new Set<number>();
    const gpus = new Set<number>();
    for (const r of ranks) {
      for (const cpu of [...r.cpus, ...r.commCpus]) for (const pu of coreOf.get(cpu) ?? [cpu]) cpus.add(pu);
      for (const g of r.gpus) gpus.add(g);
    }
    nodes[node] = { cpus: [...cpus].sort((a, b) => a - b), gpus: [...gpus].sort((a, b) => a - b) };
  }
  return { mode, nodes };
}

/** Distinct cores a rank map's ranks run on: what per-user core limits count, held or shared. */
export function coresUsed(rankMap: RankMap, factsOf: (node: string) => Facts | undefined): number {
  const byNode = new Map<string, Set<number>>();
  for (const r of rankMap.ranks) {
    const facts = factsOf(r.node);
    const firstPu = new Map<number, number>();
    if (facts) for (const core of topologyOf(facts).cores) for (const pu of core.pus) firstPu.set(pu, core.pus[0]!);
    let set = byNode.get(r.node);
    if (!set) byNode.set(r.node, (set = new Set()));
    for (const cpu of [...r.cpus, ...r.commCpus]) set.add(firstPu.get(cpu) ?? cpu);
  }
  let n = 0;
  for (const set of byNode.values()) n += set.size;
  return n;
}

/** Cores whose threads are all in `cpus` (an allocation holds whole cores). */
export function coresIn(cpus: readonly number[], facts: Facts): number {
  if (cpus.length === 0) return 0;
  const set = new Set(cpus);
  let n = 0;
  for (const core of topologyOf(facts).cores) if (set.has(core.pus[0]!)) n++;
  return n;
}

/** True when two allocations share no CPU or GPU of any node (and neither is exclusive where the other runs). */
export function disjoint(a: Allocation, b: Allocation): boolean {
  for (const [node, mine] of Object.entries(a.nodes)) {
    const theirs = b.nodes[node];
    if (!theirs) continue;
    if (a.mode === 'exclusive' || b.mode === 'exclusive') return false;
    if (intersects(mine.cpus, theirs.cpus) || intersects(mine.gpus, theirs.gpus)) return false;
  }
  return true;
}

function intersects(a: readonly number[], b: readonly number[]): boolean {
  // both ascending: one merge walk
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) return true;
    if (a[i]! < b[j]!) i++;
    else j++;
  }
  return false;
}
