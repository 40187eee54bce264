// The rank map as `rankd run` prints it on stderr: the same text as the planner's table
// view (`rankd plan --format table`), rendered here from the map the controller returns.
//
// A copy rather than an import: the planner's views reach TypeBox through the protocol
// package's index, and loading them cost `rankd run` ~200 ms of CPU, more than the rest
// of the command. This file needs only the schema-free CPU-list formatter.
// test/cli/rank-map-table.test.ts holds it to the planner's view, byte for byte.
import type { RankMap } from '@rankd/protocol';
import { formatCpuList } from '@rankd/protocol/cpuset';

export function renderRankMapTable(map: RankMap): string {
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

const padStart = (s: string, width: number) => (s.length >= width ? s : ' '.repeat(width - s.length) + s);
const padEnd = (s: string, width: number) => (s.length >= width ? s : s + ' '.repeat(width - s.length));

/** Left-aligned columns sized to their widest cell, two spaces apart. */
function columns(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : padEnd(c, widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** "3(10.0.0.5)" when the GID is IPv4-mapped (RoCE v2 over IPv4), else the bare index. */
function gidCell(index: number | null, gid: string | null): string {
  if (index === null) return '-';
  const v4 = gidIpv4(gid);
  return v4 ? `${index}(${v4})` : String(index);
}

/** The IPv4 address inside an IPv4-mapped GID ("0000:…:ffff:0a00:0005" → "10.0.0.5"). */
function gidIpv4(gid: string | null): string | null {
  if (!gid) return null;
  const m = /^0{1,4}:0{1,4}:0{1,4}:0{1,4}:0{1,4}:ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(gid);
  if (!m) return null;
  const hi = parseInt(m[1]!, 16);
  const lo = parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}
