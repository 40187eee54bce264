// restart: how long a gang restart takes, from a killed rank to every rank of the next
// attempt running. On one host, side by side: `rankd run --max-restarts 1 -n 2` against a
// controller and one agent on loopback, and torchrun `--max_restarts 1 --nproc_per_node 2`
// (Debian's python3-torch), each running the same worker (rankd/restart-worker.py). The
// bench SIGKILLs one worker and times until both workers of the new attempt said their
// first line (rankd/restart-probe.ts).
//
// The two other restart figures are restart-hosts.ts (3 namespace hosts × 2 ranks)
// and restart-scale.ts (2,000 × 8 simulated).
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import { type BenchContext, type FigureDescriptor, type FigureReport, type Goal, type Row } from '../lib/figure.js';
import { compareArms, comparisonRow, type Candidate } from '../lib/rows.js';
import {
  DEBIAN_PYTHON,
  DEFAULT_MONITOR_INTERVAL_S,
  torchrunArgv,
  torchrunEnv,
  whyNoTorchrun,
} from '../peers/torchrun.js';
import { ensureCliBundle } from '../rankd/cli-bundle.js';
import { startFleet, whyNoFleet, type Fleet } from '../rankd/fleet.js';
import { timeRestart, workerArgv, type RestartSample } from '../rankd/restart-probe.js';
import { rankdRestartArgv, whyNoRestarts } from '../rankd/restart-rankd.js';

const RANKS = 2;
/** torchrun's agent polls its workers; this is the quickest poll the tuned arm asks for. */
const TUNED_MONITOR_S = 0.1;
/**
 * How long attempt 0 runs before the kill. torchrun's agent polls from the moment it starts
 * the workers: a kill right after their start would wait out nearly a whole default poll
 * (5 s), a failure at a random moment waits half of one on average. Half a default poll
 * puts every round at that average.
 */
const KILL_AFTER_MS = (DEFAULT_MONITOR_INTERVAL_S * 1000) / 2;
const ARM = {
  rankd: `rankd run --max-restarts 1 -n ${RANKS}`,
  torchrun: `torchrun --max_restarts 1 --nproc_per_node ${RANKS}`,
  torchrunTuned: `torchrun --max_restarts 1 --nproc_per_node ${RANKS} --monitor_interval ${TUNED_MONITOR_S}`,
} as const;
const LABEL = `restart on one host, ${RANKS} ranks: SIGKILL of a worker → both workers of the next attempt started`;
const TORCHRUN_GOAL: Goal = { on: 'ratio', op: '<=', value: 0.5, text: '≤ 0.5× torchrun' };

export const restartFigure: FigureDescriptor = {
  name: 'restart',
  title: 'gang restart after a killed rank',
  peers: ['torchrun'],
  run,
};

/** An arm whose samples are restarts of one launcher, each in a fresh scratch directory. */
function restartArm(name: string, dir: string, env: NodeJS.ProcessEnv, argv: (socket: string) => Promise<string[]>) {
  let round = 0;
  return {
    name,
    sample: async () => {
      const scratch = path.join(dir, String(++round));
      mkdirSync(scratch, { recursive: true });
      const s: RestartSample = await timeRestart({
        dir: scratch,
        ranks: RANKS,
        killAfterMs: KILL_AFTER_MS,
        env,
        launcher: argv,
      });
      return s.ms;
    },
  };
}

async function rankdSide(ctx: BenchContext): Promise<{ fleet: Fleet } | { why: string }> {
  const why = (await whyNoRestarts(ctx)) ?? (await whyNoFleet(ctx));
  if (why) return { why };
  try {
    return { fleet: await startFleet(ctx, { agents: 1, prefix: 'restart' }) };
  } catch (err) {
    return { why: `the rankd fleet did not start: ${(err as Error).message}` };
  }
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const bundleNote = ensureCliBundle(ctx.repoRoot);
  const dir = (name: string) => path.join(ctx.tmpDir, name);
  const rankd = await rankdSide(ctx);
  try {
    const noTorchrun = whyNoTorchrun();
    const torchrunArm = (name: string, scratch: string, monitorIntervalS?: number): Candidate =>
      noTorchrun
        ? { name, unavailable: noTorchrun }
        : restartArm(name, dir(scratch), torchrunEnv(), (socket) =>
            torchrunArgv({
              nproc: RANKS,
              maxRestarts: 1,
              ...(monitorIntervalS !== undefined ? { monitorIntervalS } : {}),
              logDir: path.join(path.dirname(socket), 'torchrun-logs'),
              worker: workerArgv(ctx.repoRoot, DEBIAN_PYTHON, socket).slice(1),
            }),
          );
    const candidates: Candidate[] = [
      'fleet' in rankd
        ? restartArm(ARM.rankd, dir('rankd'), rankd.fleet.clientEnv, async (socket) =>
            rankdRestartArgv(ctx, {
              ntasks: RANKS,
              maxRestarts: 1,
              worker: workerArgv(ctx.repoRoot, DEBIAN_PYTHON, socket),
            }),
          )
        : { name: ARM.rankd, unavailable: rankd.why },
      torchrunArm(ARM.torchrun, 'torchrun'),
      torchrunArm(ARM.torchrunTuned, 'torchrun-tuned', TUNED_MONITOR_S),
    ];
    ctx.log('restart: interleaved');
    const c = await compareArms(candidates, { rounds: ctx.rounds, unit: 'ms', log: ctx.log });
    const rows: Row[] = [
      comparisonRow(c, LABEL, ARM.rankd, { arm: ARM.torchrun, label: ARM.torchrun }, [TORCHRUN_GOAL]),
      comparisonRow(c, LABEL, ARM.rankd, { arm: ARM.torchrunTuned, label: ARM.torchrunTuned }, [TORCHRUN_GOAL]),
    ];
    return { rows, notes: notes(bundleNote), limits: LIMITS, peersUsed: noTorchrun ? [] : ['torchrun'] };
  } finally {
    if ('fleet' in rankd) await rankd.fleet.stop();
  }
}

function notes(bundleNote: string): string[] {
  return [
    'Each round starts the launcher afresh with 2 workers of bench/rankd/restart-worker.py under /usr/bin/python3 ' +
      '(no torch import: the figure is the launcher, not torch). ' +
      `Once both workers of attempt 0 have reported and ${KILL_AFTER_MS / 1000} s more have passed (see the limits), ` +
      'the bench SIGKILLs rank 1 by the pid it reported; the sample ends when both workers of attempt 1 have ' +
      'reported. ' +
      'Then it kills attempt 1 as well, which spends the budget of one restart: each launcher must end the run with ' +
      'a non-zero exit, or the round fails.',
    "Workers report over a unix socket of the bench's, with the line they also print on stdout, so neither " +
      "launcher's output path (rankd's log stream, the log files torchrun tails) is in the figure.",
    'torchrun runs one node with its static rendezvous on 127.0.0.1 and a free port, OMP_NUM_THREADS=1 and ' +
      "GLOO_SOCKET_IFNAME=lo, and `--redirects 1 --tee 1`: Debian 12's torchrun (torch 1.13, Python 3.11) cannot " +
      'parse its own default `--redirects 0` and fails at its first start without them.',
    `torchrun's agent looks at its workers every ${DEFAULT_MONITOR_INTERVAL_S} s by default ` +
      '(`--monitor_interval`), which bounds how soon it sees a dead worker; ' +
      `the second row gives it ${TUNED_MONITOR_S} s, torchrun at its quickest.`,
    'rankd runs against a controller and one agent started by this bench on 127.0.0.1, over TLS; `rankd run -q` is ' +
      'what a user types, without the rank map.',
    bundleNote,
  ];
}

const LIMITS = [
  'Both launchers do the same work between the kill and the new first lines: notice the dead worker, end the rest',
  'of the attempt, start a new one. torchrun notices on its next poll of the workers, which its agent makes every',
  '5 s by default from the moment it started them: the kill comes 2.5 s after the workers started, the average',
  'wait for a failure at a random moment (a kill right at the start would wait nearly 5 s). It then sends SIGTERM',
  'to the survivors and waits for them, runs a new rendezvous round on its TCP store, and forks the workers, each a',
  "new Python. rankd's supervisor sees the rank's exit at once and the agent reports it to the controller, which",
  'fails the attempt fast (the agent kills the other rank), records it, and sends attempt 1 to the agent, which',
  'starts the ranks through its native launcher. The worker start (a Python interpreter, ~20 ms on this 2-core',
  'machine) is common to both sides.',
].join(' ');
