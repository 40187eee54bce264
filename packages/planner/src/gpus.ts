// GPUs per rank. With one rank per GPU, local rank i owns the i-th allowed GPU (PCI bus
// order, as CUDA_DEVICE_ORDER=PCI_BUS_ID counts). With --gpus-per-rank G, each rank takes
// G GPUs, those on its own NUMA nodes first. Only GPUs the agent was granted are used: a
// Slurm allocation or a pod shows every GPU of the machine but grants some (Gpu.allowed).
import { PlanErrorCode, type Facts, type Gpu } from '@rankd/protocol';
import { PlanError } from './errors.js';
import { agree, plural } from '@rankd/protocol/plural';

export function sortedGpus(gpus: readonly Gpu[]): Gpu[] {
  return [...gpus].sort((a, b) => a.index - b.index);
}

/** The GPUs ranks may be given: those the agent's CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES leave in. */
export function allowedGpus(facts: Facts): Gpu[] {
  return sortedGpus(facts.gpus.filter((g) => g.allowed !== false));
}

/** The GPUs of each local rank when ranks follow GPUs one to one. */
export function gpuPerRank(gpus: readonly Gpu[], ranks: number, node: string, limit: string | null = null): Gpu[] {
  if (ranks > gpus.length) {
    throw new PlanError(
      PlanErrorCode.TooManyGpus,
      `${plural(ranks, 'rank')} with --ranks-per-node gpu, but only ${plural(gpus.length, limit ? 'allowed GPU' : 'GPU')}${limit ? ` (${limit})` : ''}`,
      {
        node,
        ...(gpus.length > 0 ? { suggestion: { ranksPerNode: gpus.length } } : {}),
      },
    );
  }
  return gpus.slice(0, ranks);
}

export function assignGpus(
  gpus: readonly Gpu[],
  perRank: number,
  rankNumas: readonly (readonly number[])[],
  node: string,
  limit: string | null = null,
): Gpu[][] {
  const ranks = rankNumas.length;
  if (perRank === 0) return rankNumas.map(() => []);
  if (perRank * ranks > gpus.length) {
    const fit = Math.floor(gpus.length / ranks);
    throw new PlanError(
      PlanErrorCode.TooManyGpus,
      `${plural(ranks, 'rank')} × ${plural(perRank, 'GPU')} ${agree(ranks, 'asks', 'ask')} for ${perRank * ranks}, but ${limit ? `only ${gpus.length} ${agree(gpus.length, 'is', 'are')} allowed (${limit})` : `the node has ${gpus.length}`}`,
      { node, ...(fit > 0 ? { suggestion: { gpusPerRank: fit } } : {}) },
    );
  }
  const free = new Set(gpus);
  return rankNumas.map((numas) => {
    const near = [...free].filter((g) => g.numaNode !== null && numas.includes(g.numaNode));
    const rest = [...free].filter((g) => !near.includes(g));
    const mine = [...near, ...rest].slice(0, perRank).sort((a, b) => a.index - b.index);
    for (const g of mine) free.delete(g);
    return mine;
  });
}
