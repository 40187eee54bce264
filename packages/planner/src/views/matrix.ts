// The node-to-node connection matrix, laid out as oneCCL prints it: shm within a
// node, RDMA where both ends use active RDMA ports of a common link layer, else TCP.
import type { RankMap, RankMapNode } from '@rankd/protocol';
import { padStart } from './text.js';

export function connection(a: RankMapNode, b: RankMapNode): 'shm' | 'RDMA' | 'TCP' {
  if (a.nodeRank === b.nodeRank) return 'shm';
  return a.linkLayers.some((l) => b.linkLayers.includes(l)) ? 'RDMA' : 'TCP';
}

export function renderMatrix(map: RankMap): string {
  const cell = (s: string) => padStart(s, 12) + ' ';
  const lines = [`${padStart('ID', 6)} |${map.nodes.map((n) => cell(String(n.nodeRank))).join('')}`];
  for (const a of map.nodes) {
    lines.push(`${padStart(String(a.nodeRank), 6)} |${map.nodes.map((b) => cell(connection(a, b))).join('')}`);
  }
  return lines.join('\n') + '\n';
}
