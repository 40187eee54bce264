// agent-rest: what a rankd agent costs a node while nothing runs. One controller and one
// agent on 127.0.0.1; once the agent is ready and has settled, its RSS and CPU (with any
// children) are read from /proc every second, in windows of 10 s.
import {
  measured,
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
  type Row,
} from '../lib/figure.js';
import { MIN_ROUNDS } from '../lib/interleave.js';
import { readRss, sampleUsage } from '../lib/proc-sampling.js';
import { summarize } from '../lib/stats.js';
import { ensureCliBundle } from '../rankd/cli-bundle.js';
import { startFleet, whyNoFleet } from '../rankd/fleet.js';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const SETTLE_MS = 10_000;
const WINDOW_MS = 10_000;
const RSS_GOAL: Goal = { on: 'rankd', op: '<', value: 60, text: 'RSS < 60 MB' };
const CPU_GOAL: Goal = { on: 'rankd', op: '<', value: 0.5, text: 'CPU < 0.5%' };

export const agentRestFigure: FigureDescriptor = {
  name: 'agent-rest',
  title: 'agent at rest',
  peers: [],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const limits = [
    'A Node process holds about 38-40 MB of RSS before running any code of its own (most of it pages of the node binary),',
    'so the memory goal leaves the agent some 20 MB for its modules and state. TLS, the WebSocket and pino take about 8 MB',
    '(more of the node binary’s pages, OpenSSL’s state). The agent runs from one bundled file',
    '(packages/agent/dist/bundle/daemon.js, scripts/bundle-agent.mjs): loaded as some 800 ES modules, 680 of them TypeBox’s, the same code held about',
    '13 MB more for as long as the agent ran (module records and source strings); bundled, TypeBox and the protocol’s',
    'schemas with the agent’s own code add some 3 MB to a process that has loaded ws, pino and TLS, so taking the schemas',
    'off the idle path would save at most that. Enrollment and renewal write their key and CSR with node:crypto, no X.509',
    'library. V8 shrinks its young generation some 20 s after the agent goes idle, so --max-semi-space-size changes only its',
    'first seconds, not this figure. At rest its CPU is heartbeats and the periodic facts refresh.',
  ].join(' ');
  const rows = (rss: Row['rankd'], cpu: Row['rankd']): Row[] => [
    { figure: 'agent at rest: RSS', rankd: rss, goals: [RSS_GOAL] },
    { figure: 'agent at rest: CPU (share of one core)', rankd: cpu, goals: [CPU_GOAL] },
  ];
  const why = await whyNoFleet(ctx);
  if (why) return { rows: rows(notMeasured(why), notMeasured(why)), notes: [], limits, peersUsed: [] };
  const bundleNotes = [ensureCliBundle(ctx.repoRoot), ensureAgentBundle(ctx.repoRoot)];
  let fleet;
  try {
    fleet = await startFleet(ctx, { agents: 1, prefix: 'rest' });
  } catch (err) {
    const w = notMeasured(`the rankd fleet did not start: ${(err as Error).message}`);
    return { rows: rows(w, w), notes: [], limits, peersUsed: [] };
  }
  try {
    const agent = fleet.agents[0]!;
    ctx.log(
      `agent-rest: agent pid ${agent.pid} ready; settling ${SETTLE_MS / 1000} s, then ${Math.max(MIN_ROUNDS, ctx.rounds)} windows of ${WINDOW_MS / 1000} s`,
    );
    await sleep(SETTLE_MS);
    const rss: number[] = [];
    const cpu: number[] = [];
    for (let w = 0; w < Math.max(MIN_ROUNDS, ctx.rounds); w++) {
      const usage = await sampleUsage(agent.pid, { durationMs: WINDOW_MS, intervalMs: 1000, includeChildren: true });
      rss.push(usage.rssMb.median);
      cpu.push(usage.cpuPercent);
    }
    const rssAtEnd = readRss(agent.pid);
    const bare = await bareNodeRss();
    return {
      rows: rows(measured('MB', summarize(rss)), measured('%', summarize(cpu))),
      notes: [
        `One \`rankd agent\` (pid and children) with its controller on 127.0.0.1; sampled after it was ready and ${SETTLE_MS / 1000} s of settling. RSS: median of each 10-s window's per-second samples; CPU: each window's utime+stime over its wall time.`,
        ...bundleNotes,
      ],
      limits: [
        limits,
        rssAtEnd
          ? `At the end the agent's RSS was ${(rssAtEnd.anonKb / 1024).toFixed(1)} MB anonymous (heap, code, buffers) and ${(rssAtEnd.fileKb / 1024).toFixed(1)} MB file-backed (pages of the node binary and native addons, shared with every other Node process).`
          : '',
        bare
          ? `A bare \`node -e "setTimeout(()=>{},5000)"\` holds ${bare.total.toFixed(1)} MB here, ${bare.file.toFixed(1)} MB of it file-backed.`
          : '',
      ]
        .filter(Boolean)
        .join(' '),
      peersUsed: [],
    };
  } finally {
    await fleet.stop();
  }
}

/**
 * The agent always runs its bundle (scripts/bundle-agent.mjs; RANKD_DEV=1 alone loads the
 * compiled modules), which `npm run bench` makes first with `npm run build`; a sentence for the notes.
 */
function ensureAgentBundle(repoRoot: string): string {
  if (!existsSync(path.join(repoRoot, 'packages/agent/dist/bundle/daemon.js')))
    throw new Error('the agent is not bundled: run `npm run build` (npm run bench does)');
  return 'The agent ran from its bundle (packages/agent/dist/bundle/daemon.js, made by `npm run build`), as an installed agent does.';
}

/** What Node itself holds, idle, before any module of ours. */
async function bareNodeRss(): Promise<{ total: number; file: number } | null> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 5000)'], { stdio: 'ignore' });
  try {
    await sleep(2000);
    const rss = child.pid ? readRss(child.pid) : null;
    return rss ? { total: rss.totalKb / 1024, file: rss.fileKb / 1024 } : null;
  } finally {
    child.kill('SIGTERM');
  }
}
