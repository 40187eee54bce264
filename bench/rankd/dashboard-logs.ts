// The dashboard's job page following a job's output, measured over a window: how busy the
// page's main thread is (CDP Performance.getMetrics: TaskDuration is the seconds of main-
// thread work so far, so its change over the window divided by the window is the busy
// fraction), how many lines the page took in (the log view's own count), and what the
// controller, the agent and Chromium spent in CPU meanwhile (/proc).
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { chromiumPids, isRenderer } from '../lib/chromium.js';
import { watchCpu } from '../lib/proc-sampling.js';
import type { Fleet } from './fleet.js';

const PAGE_TIMEOUT_MS = 30_000;
/** How long the page may take to show the job following with lines in it. */
const FOLLOW_TIMEOUT_MS = 30_000;

export interface FollowingPage {
  page: Page;
  cdp: CDPSession;
  close(): Promise<void>;
}

export interface LogWindow {
  /** Main-thread work ÷ wall time over the window, in %. */
  busyPercent: number;
  /** The same split the way Chromium accounts it: scripts, style recalculation, layout. */
  scriptPercent: number;
  stylePercent: number;
  layoutPercent: number;
  /** Everything else in the tasks: paint recording, compositing commits, event dispatch, IPC. */
  otherPercent: number;
  /**
   * CPU time of the main thread ÷ wall time (ThreadTime): unlike TaskDuration it does not
   * count the time a task spent waiting for a core, which on 2 shared cores is not nothing.
   */
  threadCpuPercent: number;
  /** Layouts and style recalculations per second: about one each per rendered frame. */
  layoutsPerSecond: number;
  /** Lines the log view took in during the window (dropped ones included), per second. */
  linesPerSecond: number;
  /** The page's JS heap at the end of the window, MB. */
  heapMb: number;
  /** CPU as % of one core. */
  controllerCpu: number;
  agentCpu: number;
  chromiumCpu: number;
  rendererCpu: number;
  windowMs: number;
}

/** "12,345 lines (20,000 older dropped) · following" → lines taken in so far, and the state. */
function parseStatus(text: string): { lines: number; state: string } {
  const m = /^([\d,]+) lines(?: \(([\d,]+) older dropped\))? · (.+)$/.exec(text.trim());
  if (!m) throw new Error(`the log status reads "${text}"`);
  const n = (s: string | undefined) => Number((s ?? '0').replace(/,/g, ''));
  return { lines: n(m[1]) + n(m[2]), state: m[3]! };
}

async function logStatus(page: Page): Promise<{ lines: number; state: string }> {
  return parseStatus(await page.getByTestId('log-status').innerText({ timeout: PAGE_TIMEOUT_MS }));
}

/** Signs a fresh browser context in with `loginUrl`, opens the job's page, and waits until it follows live output. */
export async function openFollowingJobPage(browser: Browser, loginUrl: string, jobId: string): Promise<FollowingPage> {
  const context: BrowserContext = await browser.newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    await page.goto(loginUrl);
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    await page.goto(`${new URL(loginUrl).origin}/ui/#/jobs/${encodeURIComponent(jobId)}`);
    await page.getByTestId('log-status').waitFor();
    const deadline = Date.now() + FOLLOW_TIMEOUT_MS;
    let status = await logStatus(page);
    while (!(status.state === 'following' && status.lines > 0)) {
      if (Date.now() > deadline)
        throw new Error(
          `the job page did not follow output within ${FOLLOW_TIMEOUT_MS / 1000} s (status: ${status.lines} lines, ${status.state})`,
        );
      await new Promise((r) => setTimeout(r, 200));
      status = await logStatus(page);
    }
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    return { page, cdp, close: () => context.close() };
  } catch (err) {
    await context.close();
    throw err;
  }
}

async function metrics(cdp: CDPSession): Promise<Map<string, number>> {
  const { metrics: list } = await cdp.send('Performance.getMetrics');
  return new Map(list.map((m) => [m.name, m.value]));
}

/** One window of `windowMs` on a page that follows; fails if the page stops following during it. */
export async function measureLogWindow(fleet: Fleet, following: FollowingPage, windowMs: number): Promise<LogWindow> {
  const { page, cdp } = following;
  const browserPids = chromiumPids();
  const cpu = {
    controller: watchCpu([fleet.controller.pid]),
    agent: watchCpu(fleet.agents.map((a) => a.pid)),
    chromium: watchCpu(browserPids),
    renderer: watchCpu(browserPids.filter(isRenderer)),
  };
  const before = await metrics(cdp);
  const startLines = (await logStatus(page)).lines;
  const startAt = performance.now();
  await new Promise((r) => setTimeout(r, windowMs));
  const after = await metrics(cdp);
  const end = await logStatus(page);
  const seconds = (performance.now() - startAt) / 1000;
  const usage = {
    controller: cpu.controller.stop(),
    agent: cpu.agent.stop(),
    chromium: cpu.chromium.stop(),
    renderer: cpu.renderer.stop(),
  };
  if (end.state !== 'following') throw new Error(`the page stopped following during the window (${end.state})`);
  // Timestamp is the browser's own monotonic clock at each read, so busy time and wall time share one clock
  const wall = (after.get('Timestamp') ?? 0) - (before.get('Timestamp') ?? 0);
  if (!(wall > 0)) throw new Error('Performance.getMetrics gave no Timestamp');
  const share = (name: string) => (((after.get(name) ?? 0) - (before.get(name) ?? 0)) / wall) * 100;
  return {
    busyPercent: share('TaskDuration'),
    scriptPercent: share('ScriptDuration'),
    stylePercent: share('RecalcStyleDuration'),
    layoutPercent: share('LayoutDuration'),
    otherPercent: share('TaskOtherDuration'),
    threadCpuPercent: share('ThreadTime'),
    layoutsPerSecond: ((after.get('LayoutCount') ?? 0) - (before.get('LayoutCount') ?? 0)) / wall,
    linesPerSecond: (end.lines - startLines) / seconds,
    heapMb: (after.get('JSHeapUsedSize') ?? 0) / 2 ** 20,
    controllerCpu: usage.controller.cpuPercent,
    agentCpu: usage.agent.cpuPercent,
    chromiumCpu: usage.chromium.cpuPercent,
    rendererCpu: usage.renderer.cpuPercent,
    windowMs: wall * 1000,
  };
}
