// `rankd doctor [PATTERN]`: the preflight checks a runbook does by hand, per node, each
// PASS, WARN or FAIL with a one-line fix; `--matrix` adds TCP reachability between every
// pair of nodes. Exits 1 when any check fails.
import type { Command } from 'commander';
import type { DoctorCheck, DoctorRequest, DoctorResult, ReachMatrix } from '@rankd/protocol';
import { PROBE_TIMEOUT_SECONDS } from '@rankd/protocol/limits';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { ExitCode } from '../exit-codes.js';
import { collect, secondsIn } from '../options.js';
import { plural } from '@rankd/protocol/plural';

export const DOCTOR_FAILED = 1;

interface DoctorFlags {
  requirePath?: string[];
  matrix?: boolean;
  iface?: string;
  /** Seconds. */
  timeout?: number;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command('doctor')
    .description(
      'preflight checks of the nodes a pattern selects: memlock, RDMA ports and GIDs, NIC locality, consistency, clocks, memory, the rank supervisor and its version, numactl, paths',
    )
    .argument('[pattern]', 'hosts: all, group, host*, g1:g2, g1:&g2, g1:!g2, key=value', 'all')
    .option(
      '--require-path <path>',
      'a path every node must have, e.g. the model directory on NFS (repeatable)',
      collect,
    )
    .option('--matrix', 'probe TCP between every pair of nodes and print the connection matrix')
    .option(
      '--iface <netdev>',
      "probe over this interface's address (the one ranks use) instead of the registered address",
    )
    .option(
      '--timeout <time>',
      `how long to wait for each agent: seconds or a duration (default 10, at most ${PROBE_TIMEOUT_SECONDS.max})`,
      secondsIn(PROBE_TIMEOUT_SECONDS),
    )
    .option('--json', 'print JSON')
    .action(async (pattern: string, flags: DoctorFlags) => {
      const timeout = flags.timeout;
      const body: DoctorRequest = {
        pattern,
        ...(flags.requirePath ? { requirePaths: flags.requirePath } : {}),
        ...(flags.matrix ? { matrix: true } : {}),
        ...(flags.iface ? { iface: flags.iface } : {}),
        ...(timeout !== undefined ? { timeout } : {}),
      };
      const timeoutMs = ((timeout ?? 10) * 2 + 60) * 1000;
      const result = await call(loadClientConfig(), 'POST /v1/doctor', { body, timeoutMs });
      process.stdout.write(flags.json ? JSON.stringify(result, null, 2) + '\n' : renderDoctor(result));
      process.exitCode = result.summary.fail > 0 ? DOCTOR_FAILED : ExitCode.Ok;
    });
}

export function renderDoctor(r: DoctorResult): string {
  const byNode = new Map<string, DoctorCheck[]>();
  for (const c of r.checks) {
    const key = c.node ?? '';
    byNode.set(key, [...(byNode.get(key) ?? []), c]);
  }
  const width = Math.max(6, ...r.checks.map((c) => c.check.length));
  const out: string[] = [];
  for (const [node, checks] of byNode) {
    out.push(node === '' ? 'across nodes\n' : `${node}\n`);
    for (const c of checks) {
      out.push(`  ${c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.message}\n`);
      if (c.fix) out.push(`        ${' '.repeat(width)}  fix: ${c.fix}\n`);
    }
  }
  if (r.matrix) out.push(renderMatrix(r.matrix));
  if (r.nodes.length === 0) out.push(`no hosts matched "${r.pattern}"\n`);
  out.push(
    `\n${r.summary.pass} PASS, ${r.summary.warn} WARN, ${r.summary.fail} FAIL over ${plural(r.nodes.length, 'host')}\n`,
  );
  return out.join('');
}

/** Rows probe columns: each cell is the round trip in ms from the row's node to the column's, or why not. */
export function renderMatrix(m: ReachMatrix): string {
  if (m.nodes.length === 0) return '';
  const cell = (i: number, j: number) => {
    if (i === j) return '-';
    const c = m.cells[i]?.[j];
    if (!c) return '?';
    return c.ok ? (c.rttMs === null ? 'ok' : `${c.rttMs}`) : 'FAIL';
  };
  const rows = m.nodes.map((n, i) => [n, ...m.nodes.map((_, j) => cell(i, j))]);
  const header = ['from \\ to', ...m.nodes];
  const widths = header.map((h, k) => Math.max(h.length, ...rows.map((r) => r[k]!.length)));
  const line = (cells: string[]) =>
    '  ' +
    cells
      .map((c, k) => c.padEnd(widths[k]!))
      .join('  ')
      .trimEnd() +
    '\n';
  const failures = m.nodes.flatMap((n, i) =>
    m.nodes.flatMap((t, j) =>
      i !== j && m.cells[i]?.[j] && !m.cells[i][j].ok ? [`  ${n} → ${t}: ${m.cells[i][j].error}\n`] : [],
    ),
  );
  return [
    '\nconnection matrix (TCP round trip in ms, row → column):\n',
    line(header),
    ...rows.map(line),
    ...failures,
  ].join('');
}
