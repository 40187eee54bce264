// PMI_process_mapping from a rank map: which node each rank is on, in the form MPICH
// reads, `(vector,(start node,node count,ranks per node),…)`. MPICH repeats the vector
// until every rank is placed, so a cyclic map is one cycle long. Without the key MPICH
// falls back to comparing host names, and hosts that share a name (containers, network
// namespaces) would merge into one "node".
import type { RankMap } from '@rankd/protocol';

/**
 * The longest value a PMI-1 client reads whole: it clamps values to vallen_max (1024)
 * minus kvsname_max (64), keylen_max (64) and 30. Longer mappings are left out, as Flux
 * does, rather than handed over cut.
 */
export const PROCESS_MAPPING_MAX = 1024 - 64 - 64 - 30;

/** The cycle lengths tried before the full list is written out. */
const MAX_PERIOD = 256;

type Block = [start: number, nodes: number, ranksPerNode: number];

/** The mapping, or null when it does not fit a PMI value (the client then compares host names). */
export function processMapping(map: RankMap): string | null {
  const nodeOf = new Map(map.nodes.map((n): [string, number] => [n.name, n.nodeRank]));
  const sequence = map.ranks.map((r) => nodeOf.get(r.node)!);
  const blocks = compress(sequence);
  const period = shortestPeriod(blocks, sequence);
  const text = `(vector,${blocks
    .slice(0, period)
    .map(([s, n, p]) => `(${s},${n},${p})`)
    .join(',')})`;
  return text.length <= PROCESS_MAPPING_MAX ? text : null;
}

/** Runs of ranks on one node, then runs of equal runs on consecutive nodes. */
function compress(sequence: readonly number[]): Block[] {
  const runs: Array<[node: number, count: number]> = [];
  for (const node of sequence) {
    const last = runs.at(-1);
    if (last && last[0] === node) last[1]++;
    else runs.push([node, 1]);
  }
  const blocks: Block[] = [];
  for (const [node, count] of runs) {
    const last = blocks.at(-1);
    if (last && last[2] === count && last[0] + last[1] === node) last[1]++;
    else blocks.push([node, 1, count]);
  }
  return blocks;
}

/** The fewest leading blocks that, repeated as MPICH repeats them, place every rank as planned. */
function shortestPeriod(blocks: readonly Block[], sequence: readonly number[]): number {
  for (let period = 1; period < Math.min(blocks.length, MAX_PERIOD); period++) {
    if (expands(blocks.slice(0, period), sequence)) return period;
  }
  return blocks.length;
}

function expands(cycle: readonly Block[], sequence: readonly number[]): boolean {
  let i = 0;
  for (;;) {
    for (const [start, nodes, perNode] of cycle) {
      for (let n = start; n < start + nodes; n++) {
        for (let k = 0; k < perNode; k++, i++) {
          if (i === sequence.length) return true;
          if (sequence[i] !== n) return false;
        }
      }
    }
  }
}
