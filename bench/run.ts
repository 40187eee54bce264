// npm run bench [-- NAME… ] [--rounds N] [--no-install] [--out FILE] [--render-only]
// Runs the named figures (all when none), each against its peers on this machine, and
// merges the results into bench/RESULTS.md, keeping the entries of figures not run.
// --render-only rewrites the file from the data it carries, measuring nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { figures } from './figures/index.js';
import {
  formatNumber,
  judge,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type PeerCommand,
} from './lib/figure.js';
import { MIN_ROUNDS } from './lib/interleave.js';
import { describeMachine, formatMachine } from './lib/machine.js';
import { neutralizeEnvironment } from './lib/environment.js';
import { writeResults, type FigureResult } from './lib/results.js';
import { teardownAll, teardownOnSignals } from './lib/teardown.js';
import { ensurePeers } from './peers/install.js';
import { peerVersions } from './peers/versions.js';

/** No figure may run longer than this; its own process timeouts should end it far sooner. */
const FIGURE_TIMEOUT_MS = 30 * 60_000;

interface Options {
  names: string[];
  rounds: number;
  install: boolean;
  out: string;
  renderOnly: boolean;
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const log = (m: string) => process.stderr.write(`bench: ${m}\n`);

function usage(message: string): never {
  process.stderr.write(
    `bench: ${message}\nusage: npm run bench [-- NAME…] [--rounds N] [--no-install] [--out FILE] [--render-only]\nfigures: ${figures.map((f) => f.name).join(', ')}\n`,
  );
  process.exit(64);
}

function parseArgs(argv: readonly string[]): Options {
  const opts: Options = {
    names: [],
    rounds: MIN_ROUNDS,
    install: true,
    out: path.join(repoRoot, 'bench/RESULTS.md'),
    renderOnly: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--rounds') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < MIN_ROUNDS) usage(`--rounds needs an integer ≥ ${MIN_ROUNDS}`);
      opts.rounds = n;
    } else if (a === '--no-install') opts.install = false;
    else if (a === '--render-only') opts.renderOnly = true;
    else if (a === '--out') opts.out = path.resolve(argv[++i] ?? usage('--out needs a file'));
    else if (a.startsWith('-')) usage(`unknown option ${a}`);
    else opts.names.push(a);
  }
  for (const n of opts.names) if (!figures.some((f) => f.name === n)) usage(`unknown figure "${n}"`);
  return opts;
}

async function runFigure(
  figure: FigureDescriptor,
  ctx: BenchContext,
): Promise<{ report: FigureReport; failed: boolean }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`figure took longer than ${FIGURE_TIMEOUT_MS / 60_000} min`)),
      FIGURE_TIMEOUT_MS,
    );
  });
  try {
    return { report: await Promise.race([figure.run(ctx), timeout]), failed: false };
  } catch (err) {
    log(`${figure.name} failed: ${(err as Error).stack ?? String(err)}`);
    return {
      failed: true,
      report: {
        rows: [
          { figure: figure.title, rankd: { notMeasured: `the figure failed: ${(err as Error).message}` }, goals: [] },
        ],
        notes: [],
        limits: 'The figure failed before it could measure; see the message in the table.',
        peersUsed: [],
      },
    };
  } finally {
    clearTimeout(timer);
    // Whatever the figure started and did not stop (a Slurm after an error) ends here.
    await teardownAll(log);
  }
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/**
 * Waits (up to SETTLE_LIMIT_MS) for the 1-minute load average to drop below the CPU count,
 * so that a figure does not start in the wake of the one before (a 32-agent fleet, …).
 */
const SETTLE_LIMIT_MS = 90_000;
async function settle(log: (s: string) => void): Promise<void> {
  const cpus = os.availableParallelism();
  const deadline = Date.now() + SETTLE_LIMIT_MS;
  if (os.loadavg()[0]! < cpus) return;
  log(
    `waiting up to ${SETTLE_LIMIT_MS / 1000} s for the load average (${os.loadavg()[0]!.toFixed(1)}) to drop below ${cpus}`,
  );
  while (os.loadavg()[0]! >= cpus && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2000));
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.renderOnly) {
    const kept = writeResults(
      opts.out,
      [],
      figures.map((f) => f.name),
    );
    log(`rewrote ${opts.out} from its data (${kept.length} figures)`);
    return 0;
  }
  const selected = opts.names.length > 0 ? figures.filter((f) => opts.names.includes(f.name)) : [...figures];
  teardownOnSignals(log);
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'rankd-bench-'));
  // On every way out, Ctrl-C included; the daemons using it are stopped before exit.
  process.once('exit', () => rmSync(tmpDir, { recursive: true, force: true }));
  const machine = { ...describeMachine(), environment: await neutralizeEnvironment(log) };
  log(`machine: ${formatMachine(machine)}`);

  const peers = [...new Set(selected.flatMap((f) => f.peers))] as PeerCommand[];
  if (opts.install && peers.length > 0) {
    const { missing, installed } = await ensurePeers(peers, log);
    if (installed.length > 0) log(`installed: ${installed.join(' ')}`);
    for (const [peer, why] of missing) log(`peer ${peer} unavailable: ${why}`);
  }

  const fresh: FigureResult[] = [];
  let failed = 0;
  for (const figure of selected) {
    log(`── ${figure.name}: ${figure.title}`);
    const ctx: BenchContext = { repoRoot, tmpDir: path.join(tmpDir, figure.name), rounds: opts.rounds, log };
    await settle(log);
    const measuredAt = new Date().toISOString();
    const loadStart = os.loadavg()[0]!;
    const { report, failed: broke } = await runFigure(figure, ctx);
    const load = { start: round1(loadStart), end: round1(os.loadavg()[0]!) };
    if (broke) failed++;
    fresh.push({
      name: figure.name,
      title: figure.title,
      measuredAt,
      machine,
      peerVersions: await peerVersions(report.peersUsed, repoRoot),
      rounds: opts.rounds,
      load,
      rows: report.rows,
      limits: report.limits,
      notes: report.notes,
    });
    for (const row of report.rows) {
      const v = judge(row);
      const rankd =
        'measure' in row.rankd
          ? `${formatNumber(row.rankd.measure.stat.median)} ${row.rankd.measure.unit}`
          : `not measured (${row.rankd.notMeasured})`;
      const ratio = row.ratio ? `, ${formatNumber(row.ratio.median)}× ${row.peer?.name ?? ''}` : '';
      log(`   ${row.figure}: ${rankd}${ratio} → ${v.kind === 'missed' ? `MISSED: ${v.gap}` : v.kind}`);
    }
  }
  writeResults(
    opts.out,
    fresh,
    figures.map((f) => f.name),
  );
  log(`wrote ${path.relative(process.cwd(), opts.out) || opts.out}`);
  return failed > 0 ? 1 : 0;
}

process.exit(
  await main().catch(async (err: unknown) => {
    log(`fatal: ${(err as Error).stack ?? String(err)}`);
    await teardownAll(log);
    return 70;
  }),
);
