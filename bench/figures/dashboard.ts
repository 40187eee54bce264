// dashboard: the web dashboard in Debian's Chromium against a real controller and a real
// agent on 127.0.0.1. Three things a user notices: how soon the Fleet page shows the nodes
// after opening the login URL `rankd dashboard` prints (cold: a new browser context each
// time, nothing cached), how many bytes of JS and CSS that takes, and whether the job page
// keeps up with a job printing 10,000 lines/s without pinning the page's main thread.
// No peer: there is no other dashboard for these ranks to compare with.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { chromiumMissing, launchChromium, spkiPin } from '../lib/chromium.js';
import { traceWindow, type TraceSummary } from '../lib/cdp-trace.js';
import { sourceAt, profileWindow, type ProfileSummary } from '../lib/cpu-profile.js';
import {
  formatNumber,
  measured,
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
  type Row,
} from '../lib/figure.js';
import { repeat } from '../lib/interleave.js';
import { missingCommand } from '../lib/rankd.js';
import { summarize } from '../lib/stats.js';
import { dashboardLoginUrl } from '../rankd/dashboard-login.js';
import { instrumentContext, timeFleetLoad, type Asset, type LoadSample } from '../rankd/dashboard-load.js';
import { measureLogWindow, openFollowingJobPage, type FollowingPage, type LogWindow } from '../rankd/dashboard-logs.js';
import { startFleet, whyNoFleet, type Fleet } from '../rankd/fleet.js';
import { FLOOD_LINES_PER_SECOND, startFloodJob } from '../rankd/flood-job.js';
import type { Browser } from 'playwright-core';

const LOAD_TIMEOUT_MS = 30_000;
/** After the page follows, before the window: the first screenful and the backlog are behind it. */
const SETTLE_MS = 2_000;
const WINDOW_MS = 10_000;
/** The printer's own limit: opening the page + settling + the window, with room to spare; it is cancelled sooner. */
const FLOOD_SECONDS = 40;
const PROFILE_MS = 5_000;
const PROFILE_TOP = 8;
const TRACE_MS = 3_000;
const TRACE_TOP = 10;

const GOALS = {
  coldFleet: { on: 'rankd', op: '<', value: 1000, text: '< 1 s' } as Goal,
  gzip: { on: 'rankd', op: '<', value: 300, text: '< 300 KB gzipped' } as Goal,
  busy: { on: 'rankd', op: '<', value: 50, text: '< 50% busy' } as Goal,
};
const LABEL = {
  coldFcp: 'dashboard, cold load of the login URL: first contentful paint',
  coldFleet: 'dashboard, cold load of the login URL: Fleet table with the node row painted',
  warmFcp: 'dashboard, warm load (same browser context, cached): first contentful paint',
  warmFleet: 'dashboard, warm load (same browser context, cached): Fleet table with the node row painted',
  gzip: 'dashboard JS + CSS, gzipped (the .gz files served to a gzip-only client)',
  wire: 'dashboard JS + CSS, body bytes Chromium downloaded',
  raw: 'dashboard JS + CSS, uncompressed',
  busy: `job page following ${FLOOD_LINES_PER_SECOND.toLocaleString('en-US')} lines/s: main-thread busy, 10 s window`,
  thread: `job page following ${FLOOD_LINES_PER_SECOND.toLocaleString('en-US')} lines/s: main-thread CPU time (ThreadTime), 10 s window`,
  lines: `job page following ${FLOOD_LINES_PER_SECOND.toLocaleString('en-US')} lines/s: lines/s the page took in`,
  controller: `job page following ${FLOOD_LINES_PER_SECOND.toLocaleString('en-US')} lines/s: controller CPU (share of one core)`,
  chromium: `job page following ${FLOOD_LINES_PER_SECOND.toLocaleString('en-US')} lines/s: Chromium CPU, all its processes (share of one core)`,
};

export const dashboardFigure: FigureDescriptor = {
  name: 'dashboard',
  title: 'web dashboard in Chromium: first paint, bundle size, live log view',
  peers: [],
  run,
};

const KB = 1000;
const sum = (assets: readonly Asset[], f: (a: Asset) => number) => assets.reduce((a, x) => a + f(x), 0);

async function whyNot(ctx: BenchContext, dist: string): Promise<string | null> {
  return (
    chromiumMissing() ??
    (await missingCommand(ctx.repoRoot, 'dashboard')) ??
    (await whyNoFleet(ctx)) ??
    (existsSync(path.join(dist, 'index.html'))
      ? null
      : `the dashboard is not built (no ${path.relative(ctx.repoRoot, dist)}/index.html): run \`npm run build\``)
  );
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const dist = path.join(ctx.repoRoot, 'packages/dashboard/dist');
  const notes: string[] = [
    'The machine has 2 cores, shared by everything in this figure: the controller, the agent, the printing job (pinned to one core by rankd) and Chromium (browser, renderer, GPU and network processes).',
  ];
  const why = await whyNot(ctx, dist);
  const allRows = (side: (label: string) => Row['rankd']): Row[] =>
    Object.entries(LABEL).map(([key, label]) => ({
      figure: label,
      rankd: side(label),
      goals: key in GOALS ? [GOALS[key as keyof typeof GOALS]] : [],
    }));
  if (why) return { rows: allRows(() => notMeasured(why)), notes, limits: LIMITS, peersUsed: [] };

  let fleet: Fleet | undefined;
  let closeBrowser: (() => Promise<void>) | undefined;
  try {
    try {
      fleet = await startFleet(ctx, { agents: 1, prefix: 'dash' });
    } catch (err) {
      const failed = `the rankd fleet did not start: ${(err as Error).message}`;
      return { rows: allRows(() => notMeasured(failed)), notes, limits: LIMITS, peersUsed: [] };
    }
    const launched = await launchChromium(await spkiPin(fleet.url, fleet.ca));
    closeBrowser = launched.close;
    ctx.log(`dashboard: Chromium ${launched.browser.version()}`);
    notes.push(
      `Chromium ${launched.browser.version()} (Debian), headless, driven by playwright-core; the controller's certificate trusted by its SPKI pin.`,
    );

    const loads = await measureLoads(ctx, fleet, launched.browser, dist, notes);
    const logs = await measureLogs(ctx, fleet, launched.browser, dist, notes);
    return { rows: [...loads, ...logs], notes, limits: LIMITS, peersUsed: [] };
  } finally {
    await closeBrowser?.();
    await fleet?.stop();
  }
}

/** The load rows: first paint, cold and warm, and the bytes of JS and CSS a cold load takes. */
async function measureLoads(
  ctx: BenchContext,
  fleet: Fleet,
  browser: Browser,
  dist: string,
  notes: string[],
): Promise<Row[]> {
  const node = fleet.agentNames[0]!;
  const cold: LoadSample[] = [];
  const warm: LoadSample[] = [];
  const oneRound = async (): Promise<number> => {
    const url = await dashboardLoginUrl(ctx, fleet);
    // a new context is a new profile: no cache, no cookies, no open connections
    const context = await browser.newContext();
    try {
      await instrumentContext(context, node);
      const first = await context.newPage();
      const c = await timeFleetLoad(first, url, LOAD_TIMEOUT_MS);
      await first.close();
      // the same context again: the session cookie signs it in, the hashed files come from the cache
      const second = await context.newPage();
      const w = await timeFleetLoad(second, `${new URL(url).origin}/ui/`, LOAD_TIMEOUT_MS);
      cold.push(c);
      warm.push(w);
      return c.fleetMs;
    } finally {
      await context.close();
    }
  };
  ctx.log('dashboard: cold and warm loads');
  try {
    await repeat(oneRound, { samples: ctx.rounds, warmup: 1 });
  } catch (err) {
    const why = `failed: ${(err as Error).message}`;
    return [LABEL.coldFcp, LABEL.coldFleet, LABEL.warmFcp, LABEL.warmFleet, LABEL.gzip, LABEL.wire, LABEL.raw].map(
      (figure) => ({
        figure,
        rankd: notMeasured(why),
        goals: figure === LABEL.coldFleet ? [GOALS.coldFleet] : figure === LABEL.gzip ? [GOALS.gzip] : [],
      }),
    );
  }
  // the warm-up round is not counted
  cold.shift();
  warm.shift();
  const stat = (xs: LoadSample[], f: (s: LoadSample) => number) => summarize(xs.map(f));
  ctx.log(
    `  cold: FCP ${formatNumber(stat(cold, (s) => s.fcpMs).median)} ms, Fleet table ${formatNumber(stat(cold, (s) => s.fleetMs).median)} ms`,
  );

  const assets = cold.map((s) => s.assets);
  const gz = (files: Asset[]) => sum(files, (a) => statSync(path.join(dist, `${a.file}.gz`)).size) / KB;
  const encodings = [...new Set(assets.flat().map((a) => a.encoding))].join(', ');
  const last = assets.at(-1)!;
  notes.push(
    `Loads: ${cold.length} rounds after one unmeasured one. Each round asks \`rankd dashboard\` for a fresh one-time login URL (not timed), opens it in a new browser context (cold: empty cache, no cookie, a new TLS connection), then opens ${new URL(fleet.url).origin}/ui/ in a second page of that context (warm: the session cookie and the cached hashed files). One agent, so the Fleet table has one node row.`,
    "Times are read in the page: from navigation start (performance.timeOrigin) to the paint-timing entry first-contentful-paint, and to the frame that first shows `tr[data-node]` (a MutationObserver installed before the page's scripts sees the row enter the DOM; a task posted from the next requestAnimationFrame marks its paint).",
    `Warm loads took ${formatNumber(stat(warm, (s) => sum(s.assets, (a) => a.transferBytes)).median)} bytes of JS and CSS over the network (median; 0: all from the cache).`,
    `Between the row entering the DOM and its frame: ${formatNumber(stat(cold, (s) => s.fleetMs - s.rowInDomMs).median)} ms median (cold). First contentful paint is the "Loading rankd…" line of index.html, before the bundle runs; the Fleet table is the meaningful paint.`,
    `Files loaded: ${last.map((a) => `${a.file} (${formatNumber(a.decodedBytes / KB)} KB raw, ${formatNumber(statSync(path.join(dist, `${a.file}.gz`)).size / KB)} KB .gz, ${formatNumber(a.encodedBytes / KB)} KB as downloaded, Content-Encoding ${a.encoding})`).join('; ')}. KB = 1,000 bytes; body bytes, headers not counted. Chromium asked for and got ${encodings}, so the gzipped figure is the size of the .gz files the controller serves to a client that accepts gzip only.`,
  );
  return [
    {
      figure: LABEL.coldFcp,
      rankd: measured(
        'ms',
        stat(cold, (s) => s.fcpMs),
      ),
      goals: [],
    },
    {
      figure: LABEL.coldFleet,
      rankd: measured(
        'ms',
        stat(cold, (s) => s.fleetMs),
      ),
      goals: [GOALS.coldFleet],
    },
    {
      figure: LABEL.warmFcp,
      rankd: measured(
        'ms',
        stat(warm, (s) => s.fcpMs),
      ),
      goals: [],
    },
    {
      figure: LABEL.warmFleet,
      rankd: measured(
        'ms',
        stat(warm, (s) => s.fleetMs),
      ),
      goals: [],
    },
    { figure: LABEL.gzip, rankd: measured('KB', summarize(assets.map(gz))), goals: [GOALS.gzip] },
    {
      figure: `${LABEL.wire} (${encodings})`,
      rankd: measured('KB', summarize(assets.map((a) => sum(a, (x) => x.encodedBytes) / KB))),
      goals: [],
    },
    {
      figure: LABEL.raw,
      rankd: measured('KB', summarize(assets.map((a) => sum(a, (x) => x.decodedBytes) / KB))),
      goals: [],
    },
  ];
}

/** The log-view rows: the job page under a job printing 10,000 lines/s, one job per round. */
async function measureLogs(
  ctx: BenchContext,
  fleet: Fleet,
  browser: Browser,
  dist: string,
  notes: string[],
): Promise<Row[]> {
  const node = fleet.agentNames[0]!;
  const windows: LogWindow[] = [];
  const withFollowingPage = async <T>(use: (p: FollowingPage) => Promise<T>): Promise<T> => {
    const job = await startFloodJob(fleet, node, FLOOD_SECONDS);
    try {
      const page = await openFollowingJobPage(browser, await dashboardLoginUrl(ctx, fleet), job.id);
      try {
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        return await use(page);
      } finally {
        await page.close();
      }
    } finally {
      await job.stop();
    }
  };
  const oneRound = async (): Promise<number> => {
    const w = await withFollowingPage((p) => measureLogWindow(fleet, p, WINDOW_MS));
    windows.push(w);
    ctx.log(
      `  busy ${formatNumber(w.busyPercent)}% (script ${formatNumber(w.scriptPercent)}%, style ${formatNumber(w.stylePercent)}%, layout ${formatNumber(w.layoutPercent)}%, other ${formatNumber(w.otherPercent)}%; thread CPU ${formatNumber(w.threadCpuPercent)}%; ${formatNumber(w.layoutsPerSecond)} layouts/s), ${formatNumber(w.linesPerSecond)} lines/s, controller ${formatNumber(w.controllerCpu)}%, chromium ${formatNumber(w.chromiumCpu)}%`,
    );
    return w.busyPercent;
  };
  ctx.log('dashboard: job page under 10,000 lines/s');
  try {
    await repeat(oneRound, { samples: ctx.rounds, warmup: 1 });
  } catch (err) {
    const why = `failed: ${(err as Error).message}`;
    return [LABEL.busy, LABEL.thread, LABEL.lines, LABEL.controller, LABEL.chromium].map((figure) => ({
      figure,
      rankd: notMeasured(why),
      goals: figure === LABEL.busy ? [GOALS.busy] : [],
    }));
  }
  windows.shift();
  const stat = (f: (w: LogWindow) => number) => summarize(windows.map(f));
  const busy = stat((w) => w.busyPercent);
  notes.push(
    `Log view: ${windows.length} rounds after one unmeasured one, each with its own job: one rank (\`/usr/bin/python3\`, pinned to one core) writes ${FLOOD_LINES_PER_SECOND.toLocaleString('en-US')} lines/s of 96 bytes in bursts of 100 every 10 ms, paced against the clock. A fresh browser context signs in, opens the job page (following, all ranks), waits until it shows lines, then ${SETTLE_MS / 1000} s more; the window is ${WINDOW_MS / 1000} s. Busy = the change of CDP Performance.getMetrics TaskDuration over the change of its Timestamp; lines/s = the change of the log view's own count ("N lines") over the window.`,
    `Medians over the rounds, as Chromium splits the main thread's ${formatNumber(busy.median)}% busy: script ${formatNumber(stat((w) => w.scriptPercent).median)}%, style recalculation ${formatNumber(stat((w) => w.stylePercent).median)}%, layout ${formatNumber(stat((w) => w.layoutPercent).median)}%, other ${formatNumber(stat((w) => w.otherPercent).median)}% (TaskOtherDuration: paint recording, compositing commits, event dispatch, IPC); ${formatNumber(stat((w) => w.layoutsPerSecond).median)} layouts/s. TaskDuration counts a task's wall time, including time it waited for a core; ThreadTime, the main thread's CPU time, is the row below it. The renderer process used ${formatNumber(stat((w) => w.rendererCpu).median)}% of a core, the agent ${formatNumber(stat((w) => w.agentCpu).median)}%; the page's JS heap ended the window at ${formatNumber(stat((w) => w.heapMb).median)} MB.`,
  );
  // What bounds the main thread: a CPU profile and a timeline trace of one more round,
  // outside the measured ones (both have a cost of their own).
  try {
    const { profile, trace } = await withFollowingPage(async (p) => ({
      profile: await profileWindow(p.cdp, PROFILE_MS, PROFILE_TOP),
      trace: await traceWindow(browser, p.page, TRACE_MS, TRACE_TOP),
    }));
    notes.push(describeTrace(trace), describeProfile(profile, dist));
  } catch (err) {
    notes.push(`The CPU profile and trace of the job page could not be taken: ${(err as Error).message}`);
  }
  return [
    { figure: LABEL.busy, rankd: measured('%', busy), goals: [GOALS.busy] },
    {
      figure: LABEL.thread,
      rankd: measured(
        '%',
        stat((w) => w.threadCpuPercent),
      ),
      goals: [],
    },
    {
      figure: LABEL.lines,
      rankd: measured(
        'lines/s',
        stat((w) => w.linesPerSecond),
        true,
      ),
      goals: [],
    },
    {
      figure: LABEL.controller,
      rankd: measured(
        '%',
        stat((w) => w.controllerCpu),
      ),
      goals: [],
    },
    {
      figure: LABEL.chromium,
      rankd: measured(
        '%',
        stat((w) => w.chromiumCpu),
      ),
      goals: [],
    },
  ];
}

function describeTrace(t: TraceSummary): string {
  const entries = t.top.map((e) => `${e.name} ${formatNumber(e.share * 100)}%`);
  return `Timeline trace of the job page's main thread (${t.wallMs / 1000} s of that extra round): tasks took ${formatNumber(t.tasksShare * 100)}% of the window; self time by Chromium's event names, as shares of the window: ${entries.join('; ')}.`;
}

function describeProfile(p: ProfileSummary, dist: string): string {
  const busyShare = p.wallMs > 0 ? (p.busyMs / p.wallMs) * 100 : 0;
  const entries = p.top.map((e) => {
    const code = e.frame.url.includes('/ui/app-')
      ? sourceAt(path.join(dist, e.frame.url.split('/').pop()!), e.frame, 48)
      : null;
    return `${e.what} ${formatNumber(e.share * 100)}%${code ? ` (\`${code.replace(/`/g, "'")}…\`)` : ''}`;
  });
  return `CPU profile of the job page (CDP Profiler, ${PROFILE_MS / 1000} s of one more round, not counted): the main thread was doing something (not idle) in ${formatNumber(busyShare)}% of the samples; self time by function, as shares of the busy samples ((program) is native work outside JS: parsing, style, layout, paint): ${entries.join('; ')}.`;
}

const LIMITS = [
  'On loopback the network costs little; a cold load is one TLS handshake, index.html, one JS and one CSS file, the',
  'POST /v1/session that spends the login code, and GET /v1/nodes, all answered by a controller that shares the 2 cores',
  'with the agent and Chromium. What is left is Chromium itself: a new context, parsing and running the bundle, and the',
  'frames. The log view pays per line (one SSE event per output record, JSON-parsed, split into lines, appended to the',
  'buffer) and per frame (while lines arrive it re-renders the visible rows and scrolls to the end once per animation',
  'frame, so style, layout, paint and the compositor commit run about as often as the display refreshes); the notes',
  "split the main thread's time between the two. TaskDuration, which the busy figure is made of, counts the wall time",
  "of each task, so on 2 cores shared with the printer, the agent, the controller and Chromium's other processes (and",
  'anything else running on the machine) the time a task waits for a core counts as busy; ThreadTime, the main',
  "thread's CPU time, does not, and the gap between the two rows is that wait.",
].join(' ');
