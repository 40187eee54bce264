// An allreduce sweep for the terminal, in nccl-tests' columns (size, count, type, time,
// algbw, busbw, #wrong), then the transport environment the ranks had and the verdict.
import type { AllreduceCheckResult } from '@rankd/protocol';
import { plural } from '@rankd/protocol/plural';
import { renderTable } from '../table.js';

export function renderAllreduce(r: AllreduceCheckResult): string {
  const out: string[] = [];
  const seconds = ((r.endedAt - r.startedAt) / 1000).toFixed(1);
  out.push(
    `check ${r.id}: allreduce over ${plural(r.ranks, 'rank')} on ${plural(r.nodes.length, 'node')} ` +
      `(${r.nodes.join(', ') || 'none'}), ${r.implementation ?? 'no program ran'}, job ${r.jobId}, ${seconds} s\n\n`,
  );
  if (r.rows.length > 0) {
    const rows = r.rows.map((x) => [
      String(x.bytes),
      String(x.count),
      x.type,
      x.timeUs.toFixed(x.timeUs >= 100 ? 1 : 2),
      x.algbwGBs.toFixed(2),
      x.busbwGBs.toFixed(2),
      String(x.wrong),
    ]);
    out.push(renderRight(['size (B)', 'count', 'type', 'time (us)', 'algbw (GB/s)', 'busbw (GB/s)', '#wrong'], rows));
    out.push('\n');
  }
  const env = Object.entries(r.env);
  out.push(env.length === 0 ? 'transport env: none set by the planner\n' : 'transport env:\n');
  for (const [k, v] of env) out.push(`  ${k}=${v}\n`);
  if (r.message) out.push(`\n${r.message}\n`);
  out.push(
    r.flagged.length > 0
      ? `\nFLAGGED: ${r.flagged.join(', ')}\n`
      : r.message === null
        ? `\nok: ${plural(r.rows.length, 'size')}, every element summed right (busbw = algbw × 2(n−1)/n)\n`
        : '',
  );
  return out.join('');
}

/** renderTable with the numbers right-aligned, as nccl-tests prints them. */
function renderRight(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const pad = (cells: readonly string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  return renderTable(
    [pad(header)],
    rows.map((r) => [pad(r)]),
  );
}
