// A hydra machinefile (`mpiexec.hydra -machinefile FILE`, MPICH and Intel MPI): one
// `host:N` line per node in node order, N its ranks. Hosts are node names, as in the
// hostfile and rankfile views: a map need not know every node's address, and the name is
// what ssh and `rankd inventory import` (which reads `host:N` back) know the node by.
//
// Hydra fills each line's N slots in turn and wraps around; `-ppn P` replaces every N by P.
// So these counts number ranks node by node (block). When the plan numbers them otherwise
// (--distribution cyclic), a `#` line says so: hydra skips comment lines.
import type { RankMap } from '@rankd/protocol';

export function renderMachinefile(map: RankMap): string {
  const order = hydraOrder(map);
  let out = '';
  if (order === 'round-robin') {
    out +=
      '# the plan deals ranks round robin: run with -ppn 1 (one rank per node in turn) to number them as planned\n';
  } else if (order === null) {
    out +=
      '# hydra numbers ranks node by node from these counts; the plan numbers them otherwise, so global ranks will differ from it\n';
  }
  for (const n of map.nodes) out += `${n.name}:${n.ranks.length}\n`;
  return out;
}

/**
 * How hydra can give every rank the node the plan gives it: by filling each node's
 * machinefile count in turn (`block`), by `-ppn 1` dealing one rank per node in turn
 * (`round-robin`), or not at all (null: then only the count per node holds).
 */
export type HydraOrder = 'block' | 'round-robin' | null;

export function hydraOrder(map: RankMap): HydraOrder {
  const planned = new Array<number>(map.worldSize);
  map.nodes.forEach((n, i) => {
    for (const r of n.ranks) planned[r] = i;
  });
  const matches = (slots: number[]) => hydraFill(slots, map.worldSize).every((node, rank) => planned[rank] === node);
  if (matches(map.nodes.map((n) => n.ranks.length))) return 'block';
  if (matches(map.nodes.map(() => 1))) return 'round-robin';
  return null;
}

/** The node index of each rank when hydra fills `slots[i]` ranks on node i in turn, wrapping. */
function hydraFill(slots: readonly number[], np: number): number[] {
  const out: number[] = [];
  if (slots.every((s) => s < 1)) return out;
  while (out.length < np) {
    for (let i = 0; i < slots.length && out.length < np; i++) {
      for (let k = 0; k < slots[i]! && out.length < np; k++) out.push(i);
    }
  }
  return out;
}
