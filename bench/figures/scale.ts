// scale: the controller holding 2,000 agents that are connected and heartbeating, at
// rest. The agents are simulated (rankd/agent-sim.ts): 4 Node processes × 500
// WebSocket connections to 127.0.0.1 over mTLS, each an enrolled node (its own key and
// certificate) speaking the real session protocol with a real facts snapshot. The
// controller runs with its default timing (heartbeat 5 s).
import { setTimeout as sleep } from 'node:timers/promises';
import { measured, notMeasured, type BenchContext, type FigureDescriptor, type FigureReport, type Row } from '../lib/figure.js';
import { MIN_ROUNDS } from '../lib/interleave.js';
import { sampleUsage } from '../lib/proc-sampling.js';
import { summarize } from '../lib/stats.js';
import { startFleet, whyNoFleet } from '../rankd/fleet.js';
import { enrollmentNote, startSims, type SimFleet } from '../rankd/sim-fleet.js';

export const SCALE_AGENTS = 2000;
const SIM_PROCESSES = 4;
const SETTLE_MS = 15_000;
const WINDOW_MS = 10_000;

export const scaleFigure: FigureDescriptor = {
  name: 'scale',
  title: `controller with ${SCALE_AGENTS.toLocaleString('en-US')} simulated agents`,
  peers: [],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const label = `controller, ${SCALE_AGENTS.toLocaleString('en-US')} agents connected and heartbeating`;
  const rows = (rss: Row['rankd'], cpu: Row['rankd']): Row[] => [
    { figure: `${label}: RSS`, rankd: rss, goals: [{ on: 'rankd', op: '<', value: 500, text: 'RSS < 500 MB' }] },
    { figure: `${label}: CPU at rest`, rankd: cpu, goals: [{ on: 'rankd', op: '<', value: 10, text: 'CPU < 10% of one core' }] },
  ];
  const limits =
    'Bounded by per-connection memory (socket buffers, session state, and the last facts of each node, kept in memory and in SQLite) and by the heartbeat rate (400 per second at 2,000 agents and 5 s) times the cost of decoding, validating and recording one heartbeat; heartbeat times are written to SQLite in one batch per sweep, not one write per beat.';
  const notes = [`${SIM_PROCESSES} simulator processes × ${SCALE_AGENTS / SIM_PROCESSES} WebSocket connections each, all to 127.0.0.1 over TLS with a client certificate per node (mTLS); every simulated node sends a hello with this machine's real facts. RSS and CPU of the controller pid sampled from /proc after all ${SCALE_AGENTS} were registered and ${SETTLE_MS / 1000} s of settling.`];
  const why = await whyNoFleet(ctx);
  if (why) return { rows: rows(notMeasured(why), notMeasured(why)), notes, limits, peersUsed: [] };
  const fleet = await startFleet(ctx, { agents: 0, prefix: 'scale' });
  let sims: SimFleet | undefined;
  try {
    try {
      sims = await startSims(ctx, fleet, { agents: SCALE_AGENTS, processes: SIM_PROCESSES, prefix: 'sim' });
    } catch (err) {
      const w = notMeasured((err as Error).message);
      return { rows: rows(w, w), notes, limits, peersUsed: [] };
    }
    ctx.log(`scale: ${SCALE_AGENTS} simulated agents ready; settling ${SETTLE_MS / 1000} s`);
    await sleep(SETTLE_MS);
    const rss: number[] = [];
    const cpu: number[] = [];
    for (let w = 0; w < Math.max(MIN_ROUNDS, ctx.rounds); w++) {
      const usage = await sampleUsage(fleet.controller.pid, { durationMs: WINDOW_MS, intervalMs: 1000, includeChildren: false });
      rss.push(usage.rssMb.median);
      cpu.push(usage.cpuPercent);
    }
    notes.push(`First simulator reported: "ready ${String(sims.ready[0]!.welcomed)}".`);
    notes.push(enrollmentNote(sims));
    return { rows: rows(measured('MB', summarize(rss)), measured('%', summarize(cpu))), notes, limits, peersUsed: [] };
  } finally {
    await sims?.stop();
    await fleet.stop();
  }
}
