// One load of the dashboard's Fleet page, timed inside the page: from the navigation's start
// (performance.timeOrigin, so performance.now() is "ms since navigation start") to the first
// contentful paint, and to the paint of the frame that first shows the node's row.
//
// The marks are taken by a script the browser runs before any of the page's own, not by
// polling from the bench: a poll would add its round trip to every figure. The row is seen
// by a MutationObserver the moment it enters the DOM; its paint is the frame after that,
// taken as a task posted from that frame's requestAnimationFrame, which runs once the frame
// has been handed to the compositor. Sizes come from the page's Resource Timing entries.
import type { BrowserContext, Page } from 'playwright-core';

// Browser globals used inside the functions the page runs; the bench project has no DOM types.
declare const window: any,
  document: any,
  PerformanceObserver: any,
  MutationObserver: any,
  MessageChannel: any,
  requestAnimationFrame: any;

export interface Asset {
  /** The file's name as the page asked for it, e.g. app-7ZVTLCOL.js. */
  file: string;
  /** Body bytes as they came over the wire (compressed), 0 from the cache. */
  encodedBytes: number;
  decodedBytes: number;
  /** Body and headers over the wire; 0 when the cache answered. */
  transferBytes: number;
  /** The response's Content-Encoding ("br", "gzip", or "identity"). */
  encoding: string;
}

export interface LoadSample {
  fcpMs: number;
  /** Navigation start → the frame that paints the node's row in the Fleet table. */
  fleetMs: number;
  /** Navigation start → the row in the DOM (before its frame): what the paint adds is the difference. */
  rowInDomMs: number;
  /** The JS and CSS the page loaded (index.html aside). */
  assets: Asset[];
}

interface Marks {
  fcp: number | null;
  rowInDom: number | null;
  rowPainted: number | null;
}

/** Runs in the page before its own scripts; records the marks in window.__rankdBench. */
function instrument(node: string): void {
  const marks: Marks = { fcp: null, rowInDom: null, rowPainted: null };
  window.__rankdBench = marks;
  new PerformanceObserver((list: any) => {
    for (const entry of list.getEntries()) if (entry.name === 'first-contentful-paint') marks.fcp = entry.startTime;
  }).observe({ type: 'paint', buffered: true });
  const selector = `tr[data-node="${node}"]`;
  const watch = new MutationObserver(() => {
    if (marks.rowInDom !== null || !document.querySelector(selector)) return;
    marks.rowInDom = performance.now();
    watch.disconnect();
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        marks.rowPainted = performance.now();
      };
      channel.port2.postMessage(null);
    });
  });
  watch.observe(document, { childList: true, subtree: true });
}

/** Installs the marks for every page the context opens from now on. */
export async function instrumentContext(context: BrowserContext, node: string): Promise<void> {
  await context.addInitScript(instrument, node);
}

/** Navigates `page` (in an instrumented context) to `url` and waits, bounded, for the node's row to be painted. */
export async function timeFleetLoad(page: Page, url: string, timeoutMs: number): Promise<LoadSample> {
  const encodings = new Map<string, string>();
  const onResponse = (response: { url(): string; headers(): Record<string, string> }) => {
    const file = new URL(response.url()).pathname.split('/').pop() ?? '';
    if (/\.(js|css)$/.test(file)) encodings.set(file, response.headers()['content-encoding'] ?? 'identity');
  };
  page.on('response', onResponse);
  try {
    await page.goto(url, { waitUntil: 'commit', timeout: timeoutMs });
    // polled every 100 ms, not every frame, so the wait itself costs the page next to nothing
    await page.waitForFunction(
      () => window.__rankdBench?.rowPainted !== null && window.__rankdBench?.fcp !== null,
      undefined,
      { timeout: timeoutMs, polling: 100 },
    );
    const seen = await page.evaluate(() => ({
      marks: window.__rankdBench as Marks,
      heading: document.querySelector('h1')?.textContent ?? '',
      resources: performance.getEntriesByType('resource').map((e: any) => ({
        name: e.name as string,
        encodedBytes: e.encodedBodySize as number,
        decodedBytes: e.decodedBodySize as number,
        transferBytes: e.transferSize as number,
      })),
    }));
    if (seen.heading !== 'Fleet') throw new Error(`the page shows "${seen.heading}", not the Fleet page`);
    const assets: Asset[] = [];
    for (const r of seen.resources) {
      const file = new URL(r.name).pathname.split('/').pop() ?? '';
      if (!/\.(js|css)$/.test(file)) continue;
      assets.push({
        file,
        encodedBytes: r.encodedBytes,
        decodedBytes: r.decodedBytes,
        transferBytes: r.transferBytes,
        encoding: encodings.get(file) ?? 'unknown',
      });
    }
    if (assets.length === 0) throw new Error('the page loaded no JS or CSS');
    return { fcpMs: seen.marks.fcp!, fleetMs: seen.marks.rowPainted!, rowInDomMs: seen.marks.rowInDom!, assets };
  } finally {
    page.off('response', onResponse);
  }
}
