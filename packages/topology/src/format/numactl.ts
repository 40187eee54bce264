// `numactl -H` (numactl/libnuma 2.0.x) from facts:
//
//   available: 2 nodes (0-1)
//   node 0 cpus: 0 1 2 3
//   node 0 size: 257556 MB
//   node 0 free: 250000 MB
//   node distances:
//   node   0   1
//     0:  10  21
//
// Sizes are the node's MemTotal/MemFree in MiB; the parenthesis is the process's
// Mems_allowed_list, which is its cpuset mems; numbers are printed "% 3d " as libnuma
// does (a space flag, width 3, then a space).
import type { Facts } from '@rankd/protocol';
// the cpuset module alone: the protocol index compiles every message schema on import
import { formatCpuList } from '@rankd/protocol/cpuset';

function num(n: number): string {
  return (n < 0 ? `${n}` : ` ${n}`).padStart(3);
}

function mb(kb: number | null): string {
  return kb === null ? '<not available>' : `${Math.floor(kb / 1024)} MB`;
}

export function renderNumactl(facts: Facts): string {
  const nodes = [...facts.numa.nodes].sort((a, b) => a.id - b.id);
  const ids = nodes.map((n) => n.id);
  const allowed = facts.numa.allowed ?? ids;
  let out = `available: ${nodes.length} nodes (${formatCpuList(allowed)})\n`;
  for (const node of nodes) {
    out += `node ${node.id} cpus:${node.cpus.map((c) => ` ${c}`).join('')}\n`;
    out += `node ${node.id} size: ${mb(node.memTotalKb)}\n`;
    out += `node ${node.id} free: ${mb(node.memTotalKb === null ? null : node.memFreeKb)}\n`;
  }
  const d = facts.numa.distances;
  // libnuma asks for the distance from the highest node to the first; 0 means no table
  const known = d.length === nodes.length && nodes.length > 0 && (d[nodes.length - 1]?.[0] ?? 0) !== 0;
  if (!known) return out + 'No distance information available.\n';
  out += 'node distances:\n';
  out += `node ${ids.map((id) => `${num(id)} `).join('')}\n`;
  nodes.forEach((node, i) => {
    out += `${num(node.id)}: ${d[i]!.map((v) => `${num(v)} `).join('')}\n`;
  });
  return out;
}
