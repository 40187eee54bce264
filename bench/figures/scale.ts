// scale: the controller holding 2,000 agents that are connected and heartbeating, at
// rest. The agents are simulated (rankd/agent-sim.ts): 4 Node processes × 500
// WebSocket connections to 127.0.0.1, each speaking the real session protocol with a
// real facts snapshot. The controller runs with its default timing (heartbeat 5 s).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDaemon, waitFor, type Daemon } from '../lib/child.js';
import { measured, notMeasured, type BenchContext, type FigureDescriptor, type FigureReport, type Row } from '../lib/figure.js';
import { MIN_ROUNDS } from '../lib/interleave.js';
import { sampleUsage } from '../lib/proc-sampling.js';
import { summarize } from '../lib/stats.js';
import { startFleet, whyNoFleet } from '../rankd/fleet.js';

export const SCALE_AGENTS = 2000;
const SIM_PROCESSES = 4;
const SETTLE_MS = 15_000;
const WINDOW_MS = 10_000;
const SIM = fileURLToPath(new URL('../rankd/agent-sim.js', import.meta.url));

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
  const notes = [`${SIM_PROCESSES} simulator processes × ${SCALE_AGENTS / SIM_PROCESSES} WebSocket connections each, all to 127.0.0.1; every simulated node sends a hello with this machine's real facts. RSS and CPU of the controller pid sampled from /proc after all ${SCALE_AGENTS} were registered and ${SETTLE_MS / 1000} s of settling.`];
  const why = await whyNoFleet(ctx);
  if (why) return { rows: rows(notMeasured(why), notMeasured(why)), notes, limits, peersUsed: [] };
  const fleet = await startFleet(ctx, { agents: 0, prefix: 'scale' });
  const sims: Daemon[] = [];
  try {
    const dataDir = path.join(ctx.tmpDir, 'fleet-scale', 'controller');
    const perProcess = SCALE_AGENTS / SIM_PROCESSES;
    for (let p = 0; p < SIM_PROCESSES; p++) {
      sims.push(startDaemon(`agent-sim ${p}`, [process.execPath, SIM, fleet.url, path.join(dataDir, 'join-token'), String(perProcess), `sim${p}`], { logFile: path.join(ctx.tmpDir, `agent-sim-${p}.log`) }));
    }
    const registered = await waitFor(async () => {
      if (sims.some((s) => s.exited)) throw new Error('a simulator exited; see its log');
      const res = await fetch(`${fleet.url}/v1/nodes`, { headers: { authorization: `Bearer ${fleet.clientEnv['RANKD_TOKEN']}` } });
      const { nodes } = (await res.json()) as { nodes: Array<{ state: string; connected: boolean }> };
      return nodes.filter((n) => n.state === 'ready' && n.connected).length >= SCALE_AGENTS;
    }, 180_000, 1000);
    if (!registered) {
      const w = notMeasured(`fewer than ${SCALE_AGENTS} simulated agents registered within 180 s`);
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
    const simLog = readFileSync(sims[0]!.logFile, 'utf8').trim().split('\n').at(-1) ?? '';
    notes.push(`First simulator reported: "${simLog}".`);
    return { rows: rows(measured('MB', summarize(rss)), measured('%', summarize(cpu))), notes, limits, peersUsed: [] };
  } finally {
    await Promise.all(sims.map((s) => s.stop()));
    await fleet.stop();
  }
}
