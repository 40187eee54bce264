// The human view: the node table as oneCCL prints it (`ID | Node name | IP | Ranks`),
// then one line per rank with compact CPU lists, memory nodes, NICs, GIDs and GPUs,
// then the planner's notes.
import { formatCpuList } from '@rankd/protocol/cpuset';
import type { RankMap } from '@rankd/protocol';
import { columns, gidIpv4, padStart } from './text.js';

export function renderTable(map: RankMap): string {
  const out: string[] = [];
  out.push(`${padStart('ID', 6)} | ${padStart('Node name', 23)} | ${padStart('IP', 14)} | Ranks`);
  for (const node of map.nodes) {
    out.push(`${padStart(String(node.nodeRank), 6)} | ${padStart(node.name, 23)} | ${padStart(node.address ?? '-', 14)} | ${formatCpuList(node.ranks)}`);
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

function gidCell(index: number | null, gid: string | null): string {
  if (index === null) return '-';
  const v4 = gidIpv4(gid);
  return v4 ? `${index}(${v4})` : String(index);
}
