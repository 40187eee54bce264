// latency: from a line written by a rank to the same line seen by a follower. Each rank
// prints its wall-clock time every 10 ms; `rankd run`, following the job's output through
// the controller, hands the lines to the bench, which subtracts. One machine, one clock.
// No peer: mpirun and srun hand lines to a terminal, not to a follower elsewhere.
import {
  measured,
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
} from '../lib/figure.js';
import { nowMs } from '../lib/clock.js';
import { repeat } from '../lib/interleave.js';
import { timeProcess } from '../lib/process-timing.js';
import { quantile, summarize } from '../lib/stats.js';
import { fleetForRun, rankdRunArgv } from '../rankd/run.js';

export const LATENCY_RANKS = 2;
export const LATENCY_LINES_PER_RANK = 200;
const INTERVAL_MS = 10;
const GOAL: Goal = { on: 'rankd', op: '<', value: 100, text: 'p99 < 100 ms' };
const LABEL = 'log latency, written → seen by a follower (p99)';

/** Wall-clock ms with sub-ms digits: performance.timeOrigin is wall time, performance.now() is monotonic from it. */
const PRINTER = [
  process.execPath,
  '-e',
  `let i = 0; const t = setInterval(() => { process.stdout.write((performance.timeOrigin + performance.now()).toFixed(3) + '\\n'); if (++i >= ${LATENCY_LINES_PER_RANK}) clearInterval(t); }, ${INTERVAL_MS});`,
];

export const latencyFigure: FigureDescriptor = {
  name: 'latency',
  title: 'log latency, line written → seen by a follower',
  peers: [],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const limits = [
    'Each line crosses the rank’s pipe, the agent (which frames it with its stream offset), the WebSocket to the',
    'controller (which stores it before fanning it out), and the follower’s stream: any batching or flush interval on',
    'that path sets the floor, and on 2 busy cores scheduling delays set the tail.',
  ].join(' ');
  const notes = [
    `Per round: one job of ${LATENCY_RANKS} ranks, each printing its wall-clock time every ${INTERVAL_MS} ms, ${LATENCY_LINES_PER_RANK} lines; the follower is \`rankd run\` (it streams the job's output from the controller). The figure is the median over rounds of each round's p99.`,
  ];
  const rankd = await fleetForRun(ctx, 1, 'latency');
  if (!('fleet' in rankd))
    return { rows: [{ figure: LABEL, rankd: notMeasured(rankd.why), goals: [GOAL] }], notes, limits, peersUsed: [] };
  try {
    const p50s: number[] = [];
    const argv = rankdRunArgv(ctx, { nodes: 1, ranksPerNode: LATENCY_RANKS }, PRINTER, { label: false });
    const oneJob = async (): Promise<number> => {
      const latencies: number[] = [];
      let partial = '';
      const wallNow = () => performance.timeOrigin + performance.now();
      await timeProcess(argv, {
        timeoutMs: 120_000,
        env: rankd.fleet.clientEnv,
        onStdout: (chunk) => {
          const seen = wallNow();
          const text = partial + chunk.toString('utf8');
          const lines = text.split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) {
            const written = Number(line);
            if (Number.isFinite(written) && written > 0) latencies.push(seen - written);
          }
        },
      });
      const expected = LATENCY_RANKS * LATENCY_LINES_PER_RANK;
      if (latencies.length !== expected) throw new Error(`the follower saw ${latencies.length} of ${expected} lines`);
      p50s.push(quantile(latencies, 0.5));
      return quantile(latencies, 0.99);
    };
    ctx.log('latency: rounds');
    const started = nowMs();
    let p99s: number[];
    try {
      p99s = await repeat(oneJob, { samples: ctx.rounds, warmup: 1 });
    } catch (err) {
      return {
        rows: [{ figure: LABEL, rankd: notMeasured(`failed: ${(err as Error).message}`), goals: [GOAL] }],
        notes,
        limits,
        peersUsed: [],
      };
    }
    notes.push(
      `Median latency (p50) per round: ${summarize(p50s.slice(-p99s.length)).median.toFixed(1)} ms median over rounds; ${((nowMs() - started) / 1000).toFixed(0)} s for all rounds.`,
    );
    return {
      rows: [{ figure: LABEL, rankd: measured('ms', summarize(p99s)), goals: [GOAL] }],
      notes,
      limits,
      peersUsed: [],
    };
  } finally {
    await rankd.fleet.stop();
  }
}
