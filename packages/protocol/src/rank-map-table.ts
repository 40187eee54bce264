// The human view of a rank map: the node table as oneCCL prints it (`ID | Node name | IP |
// Ranks`), then one line per rank with compact CPU lists, memory nodes, NICs, GIDs and
// GPUs, then the planner's notes. `rankd plan --format table` prints it, and `rankd run`
// prints it as its header from the map the controller returns. It lives here, schema-free,
// so that `rankd run` renders it without loading the planner or TypeBox.
import type { RankMap } from './plan.js';
import { formatCpuList } from './cpuset.js';
import { columns, gidIpv4, padStart } from './text-columns.js';

export function renderRankMapTable(map: RankMap): string {
  const out: string[] = [];
  out.push(`${padStart('ID', 6)} | ${padStart('Node name', 23)} | ${padStart('IP', 14)} | Ranks`);
  for (const node of map.nodes) {
    out.push(
      `${padStart(String(node.nodeRank), 6)} | ${padStart(node.name, 23)} | ${padStart(node.address ?? '-', 14)} | ${formatCpuList(node.ranks)}`,
    );
  }
  const rows = map.ranks.map((r) => [
    String(r.rank),
    r.node,
    String(r.localRank),
    formatCpuList(r.cpus) || '-',
    formatCpuList(r.commCpus) || '-',
    formatCpuList(r.memNodes) || '-',
    r.nics.map((n) => `${n.device}:${n.port}`).join(',') || '-',
    r.nics.map((n) => gidCell(n.gidIndex, n.gid)).join(',') || '-',
    r.gpus.join(',') || '-',
  ]);
  const header = ['RANK', 'NODE', 'LOCAL', 'CPUS', 'COMM', 'MEM', 'NIC', 'GID', 'GPU'];
  let text = out.join('\n') + '\n\n' + columns(header, rows);
  text += `\nworld size ${map.worldSize}, master ${map.masterAddr}:${map.masterPort}\n`;
  for (const note of map.notes) text += `note: ${note}\n`;
  return text;
}

/** "3(10.0.0.5)" when the GID is IPv4-mapped (RoCE v2 over IPv4), else the bare index. */
function gidCell(index: number | null, gid: string | null): string {
  if (index === null) return '-';
  const v4 = gidIpv4(gid);
  return v4 ? `${index}(${v4})` : String(index);
}
