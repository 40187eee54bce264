// PMI_process_mapping as MPICH reads it: the vector repeats until every rank is placed,
// so each form below must expand back to exactly the planned node of every rank.
import t from 'tap';
import type { RankMap } from '@rankd/protocol';
import { PROCESS_MAPPING_MAX, processMapping } from '#controller/pmi/process-mapping';

/** A rank map with only what the mapping reads: node order and each rank's node. */
function mapOf(nodeOfRank: number[]): RankMap {
  const nodes = [...new Set(nodeOfRank)].sort((a, b) => a - b);
  return {
    worldSize: nodeOfRank.length,
    masterAddr: '10.0.0.1',
    masterPort: 29500,
    nodes: nodes.map((n) => ({ nodeRank: n, name: `n${n}`, address: null, ranks: [], linkLayers: [] })),
    ranks: nodeOfRank.map((n, rank) => ({
      rank,
      localRank: 0,
      nodeRank: n,
      node: `n${n}`,
      address: null,
      cpus: [],
      commCpus: [],
      memNodes: [],
      gpus: [],
      nics: [],
      env: {},
    })),
    notes: [],
  };
}

/** MPICH's reading of a mapping: repeat the triples until `size` ranks are placed. */
function expand(mapping: string, size: number): number[] {
  const triples = [...mapping.matchAll(/\((\d+),(\d+),(\d+)\)/g)].map(
    (m) => m.slice(1).map(Number) as [number, number, number],
  );
  const out: number[] = [];
  while (out.length < size)
    for (const [start, nodes, per] of triples)
      for (let n = start; n < start + nodes; n++) for (let k = 0; k < per; k++) out.push(n);
  return out.slice(0, size);
}

const cases: Array<[string, number[], string]> = [
  ['one node', [0, 0], '(vector,(0,1,2))'],
  ['block, 3 nodes × 2', [0, 0, 1, 1, 2, 2], '(vector,(0,3,2))'],
  ['cyclic, 3 nodes', [0, 1, 2, 0, 1, 2], '(vector,(0,3,1))'],
  ['cyclic, a partial last round', [0, 1, 0, 1, 0], '(vector,(0,2,1))'],
  ['uneven blocks', [0, 0, 0, 1, 1, 2], '(vector,(0,1,3),(1,1,2),(2,1,1))'],
  ['two block sizes', [0, 0, 1, 1, 2, 3], '(vector,(0,2,2),(2,2,1))'],
];
for (const [what, nodes, expected] of cases) {
  t.test(what, async (t) => {
    const mapping = processMapping(mapOf(nodes));
    t.equal(mapping, expected);
    t.same(expand(mapping!, nodes.length), nodes, 'MPICH expands it back to the plan');
  });
}

t.test('a mapping that no PMI-1 client could read whole is left out', async (t) => {
  // every rank on a node of its own, in an order with no repeating cycle
  const scattered = Array.from({ length: 400 }, (_, i) => (i * 7919) % 400);
  t.equal(processMapping(mapOf(scattered)), null, `longer than ${PROCESS_MAPPING_MAX} characters`);
  const block = Array.from({ length: 16000 }, (_, i) => Math.floor(i / 8));
  t.equal(processMapping(mapOf(block)), '(vector,(0,2000,8))', '2,000 nodes × 8 is one triple');
});
