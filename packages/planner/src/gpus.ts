// GPUs per rank. With one rank per GPU, local rank i owns GPU i (PCI bus order, as
// CUDA_DEVICE_ORDER=PCI_BUS_ID counts). With --gpus-per-rank G, each rank takes G
// GPUs, those on its own NUMA nodes first.
import { PlanErrorCode, type Gpu } from '@rankd/protocol';
import { PlanError } from './errors.js';
import { agree, plural } from '@rankd/protocol/plural';

export function sortedGpus(gpus: readonly Gpu[]): Gpu[] {
  return [...gpus].sort((a, b) => a.index - b.index);
}

/** The GPUs of each local rank when ranks follow GPUs one to one. */
export function gpuPerRank(gpus: readonly Gpu[], ranks: number, node: string): Gpu[] {
  if (ranks > gpus.length) {
    throw new PlanError(
      PlanErrorCode.TooManyGpus,
      `${plural(ranks, 'rank')} with --ranks-per-node gpu, but only ${plural(gpus.length, 'GPU')}`,
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
): Gpu[][] {
  const ranks = rankNumas.length;
  if (perRank === 0) return rankNumas.map(() => []);
  if (perRank * ranks > gpus.length) {
    const fit = Math.floor(gpus.length / ranks);
    throw new PlanError(
      PlanErrorCode.TooManyGpus,
      `${plural(ranks, 'rank')} × ${plural(perRank, 'GPU')} ${agree(ranks, 'asks', 'ask')} for ${perRank * ranks}, but the node has ${gpus.length}`,
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
