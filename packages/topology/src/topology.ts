// Package, NUMA node, core and PU counts in hwloc's two views:
// - hardware (lstopo --disallowed): every object discovered;
// - allowed (hwloc's default): PUs inside the cgroup cpuset, NUMA nodes inside its
//   mems, and the packages and cores that still hold an allowed PU or an allowed
//   NUMA node.
//
// The second rule is hwloc's "memory children keep their parent": a NUMA node hangs
// below the highest object whose cpuset equals its own (a package when the node is the
// whole package), or below the smallest object covering it; that object and every
// object above it survive even when none of their PUs is allowed. CPU-less nodes get a
// cpuset first from their HMAT initiators, else from the uniquely nearest nodes, as
// hwloc does before placing them.
import type { NumaNode, TopologyCounts } from '@rankd/protocol';
import type { AllowedSets } from './cgroup.js';
import type { CpuTopology, TopoObject } from './cpu.js';

export interface Counts {
  hardware: TopologyCounts;
  allowed: TopologyCounts;
}

export interface NumaInput {
  nodes: NumaNode[];
  distances: number[][];
  initiators: Map<number, number[]>;
}

export function topologyCounts(cpu: CpuTopology, numa: NumaInput, allowed: AllowedSets): Counts {
  const pus = new Set(cpu.pus);
  const nodes = numa.nodes.filter((n) => !n.gpuMemory);
  const allowedPus = allowed.cpus ? new Set(allowed.cpus.filter((c) => pus.has(c))) : pus;
  const allowedNodes = allowed.mems ? nodes.filter((n) => allowed.mems!.includes(n.id)) : nodes;
  const localities = nodeLocalities(numa, pus);

  const keptPackages = new Set<TopoObject>();
  const keptCores = new Set<TopoObject>();
  for (const node of allowedNodes) {
    const c = localities.get(node.id);
    if (!c || c.size === 0) continue; // attached to the machine itself
    for (const p of cpu.packages) if (covers(p.cpus, c)) keptPackages.add(p);
    const packageEqual = cpu.packages.some((p) => p.cpus.length === c.size && covers(p.cpus, c));
    for (const k of cpu.cores) if (covers(k.cpus, c) && !(packageEqual && k.cpus.length === c.size)) keptCores.add(k);
  }
  const hasAllowedPu = (o: TopoObject) => o.cpus.some((c) => allowedPus.has(c));
  return {
    hardware: {
      packages: cpu.packages.length,
      numaNodes: Math.max(nodes.length, 1),
      cores: cpu.cores.length,
      pus: pus.size,
    },
    allowed: {
      packages: cpu.packages.filter((p) => hasAllowedPu(p) || keptPackages.has(p)).length,
      numaNodes: nodes.length === 0 ? 1 : allowedNodes.length,
      cores: cpu.cores.filter((k) => hasAllowedPu(k) || keptCores.has(k)).length,
      pus: allowedPus.size,
    },
  };
}

function covers(outer: readonly number[], inner: ReadonlySet<number>): boolean {
  if (outer.length < inner.size) return false;
  let n = 0;
  for (const c of outer) if (inner.has(c)) n++;
  return n === inner.size;
}

/** The cpuset each non-GPU node is placed by. */
function nodeLocalities(numa: NumaInput, pus: ReadonlySet<number>): Map<number, Set<number>> {
  const visible = numa.nodes.map((n) => !n.gpuMemory);
  const sets = numa.nodes.map((n) => new Set(n.cpus.filter((c) => pus.has(c))));
  numa.nodes.forEach((node, i) => {
    if (!visible[i] || sets[i]!.size > 0) return;
    for (const id of numa.initiators.get(node.id) ?? []) {
      const j = numa.nodes.findIndex((n) => n.id === id);
      if (j >= 0 && j !== i && visible[j]) for (const c of sets[j]!) sets[i]!.add(c);
    }
    if (sets[i]!.size === 0) nearestNodes(numa.distances, i, visible, sets);
  });
  const out = new Map<number, Set<number>>();
  numa.nodes.forEach((n, i) => {
    if (visible[i]) out.set(n.id, sets[i]!);
  });
  return out;
}

/** A CPU-less node takes the CPUs of the nodes strictly nearest to it, unless all are equally near. */
function nearestNodes(distances: number[][], i: number, visible: boolean[], sets: Set<number>[]): void {
  const row = distances[i];
  if (!row || row.length !== sets.length) return;
  let min = Infinity;
  let count = 0;
  row.forEach((d, j) => {
    if (j === i || !visible[j]) return;
    if (d < min) [min, count] = [d, 1];
    else if (d === min) count++;
  });
  if (min === Infinity || min <= row[i]! || count === sets.length - 1) return;
  row.forEach((d, j) => {
    if (j !== i && visible[j] && d === min) for (const c of sets[j]!) sets[i]!.add(c);
  });
}
