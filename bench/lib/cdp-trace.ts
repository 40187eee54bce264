// Where a page's main thread spends its time, by Chromium's own names for the work (a
// timeline trace, as DevTools' Performance panel records it): self time of each kind of
// event — FunctionCall, EventDispatch, UpdateLayoutTree, Layout, Paint, Commit, … — on the
// renderer's main thread over a window. The JS profiler lumps all of the non-JS work into
// "(program)"; this says which part of it a figure is paying for.
import type { Browser, Page } from 'playwright-core';

const CATEGORIES = ['toplevel', 'devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute', 'blink'];

interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  args?: { name?: string };
}

export interface TraceSummary {
  wallMs: number;
  /** Self time by event name, largest first, as ms and as a share of the window. */
  top: Array<{ name: string; selfMs: number; share: number }>;
  /** What the top-level tasks (RunTask) add up to, as a share of the window. */
  tasksShare: number;
}

/** Traces `page` for `ms` (bounded by construction) and summarizes its busiest renderer main thread. */
export async function traceWindow(browser: Browser, page: Page, ms: number, topN: number): Promise<TraceSummary> {
  await browser.startTracing(page, { categories: CATEGORIES, screenshots: false });
  await new Promise((r) => setTimeout(r, ms));
  const buffer = await browser.stopTracing();
  const parsed = JSON.parse(buffer.toString('utf8')) as { traceEvents?: TraceEvent[] } | TraceEvent[];
  return summarizeTrace(Array.isArray(parsed) ? parsed : (parsed.traceEvents ?? []), ms, topN);
}

export function summarizeTrace(events: readonly TraceEvent[], wallMs: number, topN: number): TraceSummary {
  // the renderer main threads by their metadata name; the busiest one is the page's
  const mainThreads = new Set(
    events
      .filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain')
      .map((e) => `${e.pid}:${e.tid}`),
  );
  const byThread = new Map<string, TraceEvent[]>();
  for (const e of events) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph !== 'X' || e.dur === undefined || !mainThreads.has(key)) continue;
    const list = byThread.get(key) ?? [];
    list.push(e);
    byThread.set(key, list);
  }
  const total = (list: TraceEvent[]) => list.reduce((a, e) => a + (e.name === 'RunTask' ? e.dur! : 0), 0);
  const busiest = [...byThread.values()].sort((a, b) => total(b) - total(a))[0] ?? [];

  // self time: an event's duration less that of the events directly inside it
  const sorted = [...busiest].sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
  const self = new Map<string, number>();
  const stack: Array<{ end: number; name: string; children: number; dur: number }> = [];
  const close = (frame: { name: string; children: number; dur: number }) =>
    self.set(frame.name, (self.get(frame.name) ?? 0) + Math.max(0, frame.dur - frame.children));
  for (const e of sorted) {
    while (stack.length > 0 && stack.at(-1)!.end <= e.ts) close(stack.pop()!);
    if (stack.length > 0) stack.at(-1)!.children += e.dur!;
    stack.push({ end: e.ts + e.dur!, name: e.name, children: 0, dur: e.dur! });
  }
  while (stack.length > 0) close(stack.pop()!);

  const windowUs = wallMs * 1000;
  const top = [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, topN)
    .map(([name, us]) => ({ name, selfMs: us / 1000, share: us / windowUs }));
  return { wallMs, top, tasksShare: total(busiest) / windowUs };
}
