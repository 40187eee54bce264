// scale: the controller holding 2,000 agents that are connected and heartbeating, at
// rest. The agents are simulated (rankd/agent-sim.ts): 4 Node processes × 500
// WebSocket connections to 127.0.0.1 over mTLS, each an enrolled node (its own key and
// certificate) speaking the real session protocol with a real facts snapshot. The
// controller runs with its default timing (heartbeat 5 s).
//
// Then the handshake storm: the controller is SIGKILLed and started again on the same
// address and data directory, and every simulated agent reconnects with the real agent's
// backoff; timed from the new controller's spawn to the last node welcomed again.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  measured,
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Row,
} from '../lib/figure.js';
import { MIN_ROUNDS } from '../lib/interleave.js';
import { sampleUsage, watchUsage } from '../lib/proc-sampling.js';
import { summarize } from '../lib/stats.js';
import { startFleet, whyNoFleet, type Fleet } from '../rankd/fleet.js';
import { enrollmentNote, startSims, type SimFleet } from '../rankd/sim-fleet.js';

export const SCALE_AGENTS = 2000;
const SIM_PROCESSES = 4;
const SETTLE_MS = 15_000;
const WINDOW_MS = 10_000;
const STORM_ROUNDS = 3;
const STORM_TIMEOUT_MS = 120_000;

export const scaleFigure: FigureDescriptor = {
  name: 'scale',
  title: `controller with ${SCALE_AGENTS.toLocaleString('en-US')} simulated agents`,
  peers: [],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const label = `controller, ${SCALE_AGENTS.toLocaleString('en-US')} agents connected and heartbeating`;
  const storm = `controller restart under ${SCALE_AGENTS.toLocaleString('en-US')} mTLS agents`;
  const rows = (rss: Row['rankd'], cpu: Row['rankd'], back: Row['rankd'], peak: Row['rankd']): Row[] => [
    { figure: `${label}: RSS`, rankd: rss, goals: [{ on: 'rankd', op: '<', value: 500, text: 'RSS < 500 MB' }] },
    {
      figure: `${label}: CPU at rest`,
      rankd: cpu,
      goals: [{ on: 'rankd', op: '<', value: 10, text: 'CPU < 10% of one core' }],
    },
    {
      figure: `${storm}: spawn → all reconnected`,
      rankd: back,
      goals: [{ on: 'rankd', op: '<', value: 15_000, text: 'all back < 15 s' }],
    },
    {
      figure: `${storm}: peak RSS of the new controller`,
      rankd: peak,
      goals: [{ on: 'rankd', op: '<', value: 500, text: 'RSS < 500 MB' }],
    },
  ];
  const limits =
    'At rest, bounded by per-connection memory (socket buffers, session state, and the last facts of each node, kept in memory and in SQLite) and by the heartbeat rate (400 per second at 2,000 agents and 5 s) times the cost of decoding, validating and recording one heartbeat; heartbeat times are written to SQLite in one batch per sweep, not one write per beat. ' +
    "After a restart, bounded by the controller's own start (module loading, about a second here) and then by the handshakes: per node a TLS handshake with an ECDSA P-256 signature and a client-certificate check, the upgrade, and a hello whose facts are validated and stored; the agents' backoff (250 ms doubling, equal jitter) spreads their arrival.";
  const notes = [
    `${SIM_PROCESSES} simulator processes × ${SCALE_AGENTS / SIM_PROCESSES} WebSocket connections each, all to 127.0.0.1 over TLS with a client certificate per node (mTLS); every simulated node sends a hello with this machine's real facts. RSS and CPU of the controller pid sampled from /proc after all ${SCALE_AGENTS} were registered and ${SETTLE_MS / 1000} s of settling.`,
    `Restart: ${STORM_ROUNDS} rounds of SIGKILL to the controller's pid, then a new \`rankd controller\` on the same address and data directory (what systemd's Restart=always does); each simulated node reconnects with the agent's own Backoff class. Timed from the new controller's spawn (its start-up included) to the last node's welcome; peak RSS read from /proc every 100 ms over the same span. The simulators share this 2-core machine with the controller.`,
  ];
  const why = await whyNoFleet(ctx);
  if (why) return { rows: rows(...nothing(why)), notes, limits, peersUsed: [] };
  const fleet = await startFleet(ctx, { agents: 0, prefix: 'scale' });
  let sims: SimFleet | undefined;
  try {
    try {
      sims = await startSims(ctx, fleet, { agents: SCALE_AGENTS, processes: SIM_PROCESSES, prefix: 'sim' });
    } catch (err) {
      return { rows: rows(...nothing((err as Error).message)), notes, limits, peersUsed: [] };
    }
    ctx.log(`scale: ${SCALE_AGENTS} simulated agents ready; settling ${SETTLE_MS / 1000} s`);
    await sleep(SETTLE_MS);
    const rss: number[] = [];
    const cpu: number[] = [];
    for (let w = 0; w < Math.max(MIN_ROUNDS, ctx.rounds); w++) {
      const usage = await sampleUsage(fleet.controller.pid, {
        durationMs: WINDOW_MS,
        intervalMs: 1000,
        includeChildren: false,
      });
      rss.push(usage.rssMb.median);
      cpu.push(usage.cpuPercent);
    }
    notes.push(`First simulator reported: "ready ${String(sims.ready[0]!.welcomed)}".`);
    notes.push(enrollmentNote(sims));
    let back: Row['rankd'];
    let peak: Row['rankd'];
    try {
      const { ms, peakMb } = await restartStorms(ctx, fleet, sims);
      back = measured('ms', summarize(ms));
      peak = measured('MB', summarize(peakMb));
    } catch (err) {
      back = peak = notMeasured((err as Error).message);
    }
    return {
      rows: rows(measured('MB', summarize(rss)), measured('%', summarize(cpu)), back, peak),
      notes,
      limits,
      peersUsed: [],
    };
  } finally {
    await sims?.stop();
    await fleet.stop();
  }
}

function nothing(why: string): [Row['rankd'], Row['rankd'], Row['rankd'], Row['rankd']] {
  const w = notMeasured(why);
  return [w, w, w, w];
}

/** Restarts the controller STORM_ROUNDS times under the connected simulators. */
async function restartStorms(
  ctx: BenchContext,
  fleet: Fleet,
  sims: SimFleet,
): Promise<{ ms: number[]; peakMb: number[] }> {
  const ms: number[] = [];
  const peakMb: number[] = [];
  for (let round = 0; round < STORM_ROUNDS; round++) {
    const spawnedAt = await fleet.restartController();
    const watch = watchUsage(fleet.controller.pid, 100);
    const back = await sims.collect('reconnected', STORM_TIMEOUT_MS);
    peakMb.push(watch.stop().peakRssMb);
    ms.push(Math.max(...back.map((e) => Number(e.at))) - spawnedAt);
    ctx.log(`scale: restart ${round + 1}: all ${SCALE_AGENTS} back ${Math.round(ms.at(-1)!)} ms after the spawn`);
    await sleep(SETTLE_MS);
  }
  return { ms, peakMb };
}
