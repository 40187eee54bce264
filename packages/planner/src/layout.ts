// How many ranks each selected node gets, and which global ranks they are.
//
// - No --ranks-per-node: one rank per node, or -n spread evenly (remainder to the
//   first nodes).
// - --ranks-per-node N|numa|socket|gpu: each node's capacity; -n then fills nodes in
//   order (block) or round-robin (cyclic), and nodes left empty are dropped unless the
//   user named the node count (-N) or the nodes (--nodelist).
// - --distribution only changes which global ranks land where: block keeps consecutive
//   ranks together, cyclic deals them round-robin.
import { PlanErrorCode, type PlacementSpec } from '@rankd/protocol';
import { exclusiveSizes } from './cpu-shares.js';
import { PlanError } from './errors.js';
import { plural } from '@rankd/protocol/plural';

export function rankCounts(
  names: readonly string[],
  capacity: ((i: number) => number) | null,
  spec: PlacementSpec,
  explicit: boolean,
  /** Why node i has fewer GPUs allowed than it has (limit-notes.ts), for --ranks-per-node gpu refusals. */
  gpuLimit: (i: number) => string | null = () => null,
): number[] {
  const n = names.length;
  const ntasks = spec.ntasks;
  if (capacity === null) {
    if (ntasks === undefined) return names.map(() => 1);
    if (ntasks < n && explicit) {
      throw new PlanError(
        PlanErrorCode.NodeCount,
        `-n ${ntasks} leaves ${n - ntasks} of the ${plural(n, 'node')} without a rank`,
        {
          suggestion: { nodes: ntasks },
        },
      );
    }
    const used = Math.min(n, ntasks);
    const sizes = exclusiveSizes(ntasks, used);
    return names.map((_, i) => sizes[i] ?? 0);
  }

  const caps = names.map((_, i) => capacity(i));
  const gpu = spec.ranksPerNode === 'gpu';
  const empty = caps.findIndex((c) => c === 0);
  if (empty >= 0) {
    throw new PlanError(
      gpu ? PlanErrorCode.TooManyGpus : PlanErrorCode.TooManyRanks,
      gpu
        ? `${noGpu(gpuLimit(empty))}, but --ranks-per-node gpu`
        : `--ranks-per-node ${spec.ranksPerNode} gives no rank`,
      { node: names[empty]! },
    );
  }
  if (ntasks === undefined) return caps;
  const total = caps.reduce((a, b) => a + b, 0);
  if (ntasks > total) {
    const limits = gpu ? names.flatMap((name, i) => [gpuLimit(i)].filter(Boolean).map((l) => `${name}: ${l}`)) : [];
    const slots = gpu ? (limits.length ? 'allowed GPU' : 'GPU') : 'rank slot';
    throw new PlanError(
      gpu ? PlanErrorCode.TooManyGpus : PlanErrorCode.TooManyRanks,
      `-n ${ntasks} is more than the ${plural(total, slots)} of ${plural(n, 'node')} with --ranks-per-node ${spec.ranksPerNode}${limits.length ? ` (${limits.join('; ')})` : ''}`,
      { suggestion: { ntasks: total } },
    );
  }
  const counts = caps.map(() => 0);
  if (spec.distribution === 'cyclic') {
    for (let left = ntasks; left > 0;) {
      for (let i = 0; i < n && left > 0; i++) {
        if (counts[i]! < caps[i]!) {
          counts[i]!++;
          left--;
        }
      }
    }
  } else {
    let left = ntasks;
    for (let i = 0; i < n; i++) {
      counts[i] = Math.min(caps[i]!, left);
      left -= counts[i]!;
    }
  }
  const used = counts.filter((c) => c > 0).length;
  if (explicit && used < n) {
    const idle = names.filter((_, i) => counts[i] === 0);
    throw new PlanError(
      PlanErrorCode.NodeCount,
      `-n ${ntasks} with --ranks-per-node ${spec.ranksPerNode} leaves ${idle.join(',')} without a rank`,
      {
        suggestion: spec.nodelist ? { nodelist: names.filter((_, i) => counts[i]! > 0) } : { nodes: used },
      },
    );
  }
  return counts;
}

/** Global ranks of each node, in local-rank order. */
export function assignRanks(counts: readonly number[], distribution: 'block' | 'cyclic'): number[][] {
  const out = counts.map(() => [] as number[]);
  let next = 0;
  if (distribution === 'block') {
    counts.forEach((c, i) => {
      for (let k = 0; k < c; k++) out[i]!.push(next++);
    });
    return out;
  }
  const max = Math.max(0, ...counts);
  for (let round = 0; round < max; round++) {
    counts.forEach((c, i) => {
      if (round < c) out[i]!.push(next++);
    });
  }
  return out;
}

function noGpu(limit: string | null): string {
  return limit ? `no allowed GPU (${limit})` : 'no GPU';
}
