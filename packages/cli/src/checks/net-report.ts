// A net check for the terminal: a table per node like nccl-tests' (min, median and max of the
// node's links), each rail's matrix with the flagged links marked, then the verdicts.
import type { LinkResult, NetCheckResult, RailSummary } from '@rankd/protocol';
import { formatBitRate, formatLatency } from '@rankd/protocol/bit-rate';
import { plural } from '@rankd/protocol/plural';
import { renderTable } from '../table.js';

export function renderNetCheck(r: NetCheckResult): string {
  const out: string[] = [];
  const seconds = ((r.endedAt - r.startedAt) / 1000).toFixed(1);
  const rails = r.rails.map((x) => `${x.name} (${x.tools.join(', ')})`).join(', ');
  out.push(
    `check ${r.id}: ${plural(r.nodes.length, 'node')}, rail ${rails}, ${r.roundsRun} of ${plural(r.rounds, 'round')} ` +
      `of ${r.durationS} s, ${seconds} s\n`,
  );
  if (r.message) return out.join('') + `${r.message}\n`;
  out.push('\n');
  const rows = r.nodes.map((n) => [
    n.node,
    n.verdict === 'ok' ? 'ok' : n.verdict.toUpperCase(),
    n.bandwidth ? formatBitRate(n.bandwidth.min) : '-',
    n.bandwidth ? formatBitRate(n.bandwidth.median) : '-',
    n.bandwidth ? formatBitRate(n.bandwidth.max) : '-',
    n.latencyUs ? formatLatency(n.latencyUs.median) : '-',
  ]);
  out.push(renderTable(['NODE', 'VERDICT', 'BW MIN', 'BW MEDIAN', 'BW MAX', 'LATENCY'], rows));
  for (const rail of r.rails) out.push(renderMatrix(r, rail));
  const notes = r.nodes.filter((n) => n.reason !== null);
  if (notes.length > 0) out.push('\n');
  for (const n of notes) out.push(`${n.node}: ${n.verdict === 'ok' ? 'ok' : n.verdict.toUpperCase()}: ${n.reason}\n`);
  for (const d of r.drained) out.push(`drained ${d}\n`);
  const flaggedLinks = r.links.filter((l) => l.flagged).length;
  out.push(
    `\n${r.flagged.length === 0 && flaggedLinks === 0 ? 'no link flagged' : `${plural(flaggedLinks, 'link direction')} flagged, ${plural(r.flagged.length, 'node')} flagged`}` +
      ` (threshold ${Math.round(r.threshold * 100)} % of the rail median)\n`,
  );
  return out.join('');
}

/** Rows send, columns receive; each cell in the unit of the rail's median, marked * when flagged, x when failed. */
function renderMatrix(r: NetCheckResult, rail: RailSummary): string {
  const nodes = r.nodes.map((n) => n.node);
  const at = new Map<string, LinkResult>();
  for (const l of r.links) if (l.rail === rail.name) at.set(`${l.src}\u0000${l.dst}`, l);
  const unit = rail.medianBps === null ? 'Gbit/s' : formatBitRate(rail.medianBps).split(' ')[1]!;
  const scale = { 'bit/s': 1, 'kbit/s': 1e3, 'Mbit/s': 1e6, 'Gbit/s': 1e9, 'Tbit/s': 1e12 }[unit] ?? 1e9;
  const cell = (src: string, dst: string): string => {
    if (src === dst) return '-';
    const l = at.get(`${src}\u0000${dst}`);
    if (!l) return '';
    if (l.error !== null || l.bandwidthBps === null) return 'x';
    const v = l.bandwidthBps / scale;
    return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)}${l.flagged ? '*' : ''}`;
  };
  const median = rail.medianBps === null ? 'no median' : `median ${formatBitRate(rail.medianBps)}`;
  const latency = rail.medianLatencyUs === null ? '' : `, latency ${formatLatency(rail.medianLatencyUs)}`;
  return [
    `\n${rail.name}: ${unit}, row → column (${median}${latency}; * below threshold, x failed)\n`,
    renderTable(
      ['from \\ to', ...nodes],
      nodes.map((src) => [src, ...nodes.map((dst) => cell(src, dst))]),
    ),
  ].join('');
}
