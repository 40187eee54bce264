// A page's JavaScript CPU profile over a window (CDP Profiler), boiled down to where the
// main thread's samples went: self time per function, plus V8's own buckets ((program) is
// work outside JS — style, layout, paint, parsing — and (garbage collector)). This is what
// a figure prints when it misses a goal, to say what bounds it.
import { readFileSync } from 'node:fs';
import type { CDPSession } from 'playwright-core';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface Profile {
  nodes: Array<{ id: number; callFrame: CallFrame }>;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileEntry {
  /** "name file:line:col", or V8's bucket name, e.g. "(garbage collector)". */
  what: string;
  frame: CallFrame;
  selfMs: number;
  /** Share of the busy (non-idle) samples. */
  share: number;
}

export interface ProfileSummary {
  wallMs: number;
  busyMs: number;
  idleMs: number;
  top: ProfileEntry[];
}

const SAMPLING_INTERVAL_US = 500;

/** Profiles the session's page for `ms` (bounded by construction) and returns the top `topN` entries by self time. */
export async function profileWindow(cdp: CDPSession, ms: number, topN: number): Promise<ProfileSummary> {
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
  await cdp.send('Profiler.start');
  await new Promise((r) => setTimeout(r, ms));
  const { profile } = (await cdp.send('Profiler.stop')) as unknown as { profile: Profile };
  await cdp.send('Profiler.disable');
  return summarizeProfile(profile, topN);
}

export function summarizeProfile(profile: Profile, topN: number): ProfileSummary {
  const frameOf = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const selfUs = new Map<string, { frame: CallFrame; us: number }>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  let wallUs = 0;
  for (let i = 0; i < samples.length; i++) {
    const frame = frameOf.get(samples[i]!);
    // timeDeltas[i] is the time since the previous sample: it belongs to what ran up to sample i
    const us = Math.max(0, deltas[i] ?? 0);
    wallUs += us;
    if (!frame) continue;
    const key = describe(frame);
    const entry = selfUs.get(key) ?? { frame, us: 0 };
    entry.us += us;
    selfUs.set(key, entry);
  }
  const idleUs = selfUs.get('(idle)')?.us ?? 0;
  selfUs.delete('(idle)');
  selfUs.delete('(root)');
  const busyUs = [...selfUs.values()].reduce((a, e) => a + e.us, 0);
  const top = [...selfUs.entries()]
    .sort((a, b) => b[1].us - a[1].us)
    .slice(0, topN)
    .map(([what, e]) => ({ what, frame: e.frame, selfMs: e.us / 1000, share: busyUs > 0 ? e.us / busyUs : 0 }));
  return { wallMs: wallUs / 1000, busyMs: busyUs / 1000, idleMs: idleUs / 1000, top };
}

function describe(f: CallFrame): string {
  if (!f.url) return f.functionName || '(anonymous)';
  const file = f.url.split('/').pop() ?? f.url;
  return `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
}

/**
 * A few characters of minified source where a profiled function starts, so that a reader can
 * tell which function `e` or `Qt` is without a source map ("split(`\n`)…" is the log buffer).
 */
export function sourceAt(file: string, frame: CallFrame, length: number): string | null {
  try {
    const line = readFileSync(file, 'utf8').split('\n')[frame.lineNumber];
    return line?.slice(frame.columnNumber, frame.columnNumber + length) ?? null;
  } catch {
    return null;
  }
}
