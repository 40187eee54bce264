// What a job holds on each node, as the rank map tells it to people: whole cores held of
// the node's allowed cores ("holds 1 of 64 cores on gpu01"). Counted on the node's full
// facts, not the free facts the job was planned on, so that "of" is the node's size.
import type { Facts, RankMap } from '@rankd/protocol';
import { topologyOf } from '../topology.js';
import { coresIn, type Allocation } from './allocation.js';

export function withHolds(map: RankMap, alloc: Allocation, factsOf: (node: string) => Facts): RankMap {
  return {
    ...map,
    nodes: map.nodes.map((node) => {
      const facts = factsOf(node.name);
      return {
        ...node,
        cores: { held: coresIn(alloc.nodes[node.name]?.cpus ?? [], facts), of: topologyOf(facts).cores.length },
      };
    }),
  };
}
