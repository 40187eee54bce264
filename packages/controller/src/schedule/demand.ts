// What a job asks for, read from its plan on the idle cluster: how many nodes, how many
// cores and GPUs on each, and the exact shape of its rank map (ranks per node, CPUs,
// worker CPUs and GPUs per rank). A job starts only on free resources that give it this
// same shape: a job is never started smaller than it was planned, and never changes its
// world size because some GPUs were busy.
import type { CpuDefault, Facts, RankMap } from '@rankd/protocol';
import { coresIn, type Allocation } from '@rankd/planner';

export interface Demand {
  ranks: number;
  nodes: number;
  /** The most cores (hyperthreads counted once) it holds on one node. */
  coresPerNode: number;
  gpusPerNode: number;
  /** Cores it holds in all, for per-user limits. */
  cores: number;
  gpus: number;
  /** The rank map's shape, run-length encoded: equal strings, equal shapes. */
  shape: string;
  /**
   * The site's CPUs-per-rank default it was planned under: later plans use it too, so that a
   * controller restarted with another default still gives a queued job its shape. Absent in
   * demands stored before it existed (they were planned under `share`).
   */
  cpuDefault?: CpuDefault;
}

export function demandOf(idle: RankMap, alloc: Allocation, factsOf: (node: string) => Facts, cores: number): Demand {
  let coresPerNode = 0;
  let gpusPerNode = 0;
  let gpus = 0;
  for (const [node, part] of Object.entries(alloc.nodes)) {
    coresPerNode = Math.max(coresPerNode, coresIn(part.cpus, factsOf(node)));
    gpusPerNode = Math.max(gpusPerNode, part.gpus.length);
    gpus += part.gpus.length;
  }
  // a --share job holds nothing, yet needs its nodes' cores to exist: size it from the plan
  if (alloc.mode === 'share') coresPerNode = Math.ceil(cores / Math.max(1, idle.nodes.length));
  const planned = idle.cpuPolicy ? { cpuDefault: idle.cpuPolicy.site } : {};
  return {
    ranks: idle.worldSize,
    nodes: idle.nodes.length,
    coresPerNode,
    gpusPerNode,
    cores,
    gpus,
    shape: shapeOf(idle),
    ...planned,
  };
}

/** Per node in node order: its ranks' (CPUs, worker CPUs, GPUs) counts, runs of equal ones collapsed. */
export function shapeOf(map: RankMap): string {
  const parts: string[] = [];
  let last = '';
  let run = 0;
  const flush = () => {
    if (run > 0) parts.push(run === 1 ? last : `${last}*${run}`);
  };
  for (const node of map.nodes) {
    for (const rank of node.ranks) {
      const r = map.ranks[rank]!;
      const key = `${r.cpus.length}.${r.commCpus.length}.${r.gpus.length}`;
      if (key === last) run++;
      else {
        flush();
        last = key;
        run = 1;
      }
    }
    flush();
    last = '';
    run = 0;
    parts.push('|');
  }
  return parts.join(',');
}

/** How the demand reads in a reason: "8 cores and 1 GPU". */
export function describePerNode(d: Demand): string {
  const cores = `${d.coresPerNode} free core${d.coresPerNode === 1 ? '' : 's'}`;
  return d.gpusPerNode > 0 ? `${cores} and ${d.gpusPerNode} free GPU${d.gpusPerNode === 1 ? '' : 's'}` : cores;
}

/** The plan options for a job's later plans: its own CPUs-per-rank default (see Demand). */
export function jobPlanOptions<T extends { defaultCpusPerRank?: CpuDefault }>(options: T, d: Demand): T {
  return { ...options, defaultCpusPerRank: d.cpuDefault ?? 'share' };
}
