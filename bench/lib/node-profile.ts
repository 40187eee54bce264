// A CPU profile of a running Node process of the bench's own (a controller) over one
// event, through the V8 inspector: the process is started with
// NODE_OPTIONS=--inspect-port=127.0.0.1:0 (nothing listens until asked), SIGUSR1 by its
// pid opens the inspector on a free loopback port (Node prints "Debugger listening on
// ws://…" on stderr, which goes to the process's log file), and the Profiler domain is
// started and stopped around the event. Nothing else is touched: no Debugger domain, so
// no code is deoptimized. The profile is boiled down to where the samples went: self
// time per function, time including callees, and self time per package.
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';

/** The environment's NODE_OPTIONS with the inspector port armed (on loopback, a free port, closed until SIGUSR1). */
export function armedNodeOptions(env: NodeJS.ProcessEnv): string {
  return [env['NODE_OPTIONS'], '--inspect-port=127.0.0.1:0'].filter(Boolean).join(' ');
}

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface Session {
  /** Stops the profiler and closes the session: the profile of everything since start(). */
  stop(): Promise<CpuProfile>;
}

const OPEN_TIMEOUT_MS = 10_000;
const CALL_TIMEOUT_MS = 60_000;

/**
 * Opens the inspector of `pid` (SIGUSR1; its log file must receive its stderr) and starts
 * the profiler, sampling every `intervalUs`. Bounded: every step has a timeout.
 */
export async function startProfile(pid: number, logFile: string, intervalUs: number): Promise<Session> {
  const before = readLog(logFile).length;
  process.kill(pid, 'SIGUSR1');
  let url: string | undefined;
  const deadline = Date.now() + OPEN_TIMEOUT_MS;
  while (!url && Date.now() < deadline) {
    url = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[\w-]+)/.exec(readLog(logFile).slice(before))?.[1];
    if (!url) await sleep(50);
  }
  if (!url)
    throw new Error(
      `process ${pid} did not open its inspector within ${OPEN_TIMEOUT_MS / 1000} s (was it started with --inspect-port?)`,
    );
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 1024 * 1024 * 1024 });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the inspector at ${url} did not answer`)), OPEN_TIMEOUT_MS);
    ws.once('open', () => (clearTimeout(timer), resolve()));
    ws.once('error', (err) => (clearTimeout(timer), reject(err)));
  });
  let seq = 0;
  const waiting = new Map<
    number,
    { resolve: (r: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();
  ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8')) as { id?: number; result?: unknown; error?: { message: string } };
    const w = m.id === undefined ? undefined : waiting.get(m.id);
    if (!w) return; // an event
    waiting.delete(m.id!);
    clearTimeout(w.timer);
    if (m.error) w.reject(new Error(m.error.message));
    else w.resolve(m.result);
  });
  const call = <T>(method: string, params: Record<string, unknown> = {}): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = ++seq;
      const timer = setTimeout(
        () => (waiting.delete(id), reject(new Error(`${method}: no answer within ${CALL_TIMEOUT_MS / 1000} s`))),
        CALL_TIMEOUT_MS,
      );
      waiting.set(id, { resolve: resolve as (r: unknown) => void, reject, timer });
      ws.send(JSON.stringify({ id, method, params }));
    });
  try {
    await call('Profiler.enable');
    await call('Profiler.setSamplingInterval', { interval: intervalUs });
    await call('Profiler.start');
  } catch (err) {
    ws.close();
    throw err;
  }
  return {
    async stop() {
      try {
        const { profile } = await call<{ profile: CpuProfile }>('Profiler.stop');
        await call('Profiler.disable');
        return profile;
      } finally {
        ws.close();
      }
    },
  };
}

function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

export interface FrameTime {
  /** "name file:line", or V8's bucket, e.g. "(garbage collector)". */
  what: string;
  ms: number;
  /** Of the busy (not idle) time. */
  share: number;
}

export interface ProfileSummary {
  wallMs: number;
  busyMs: number;
  idleMs: number;
  /** Self time: the function on top of the stack. */
  self: FrameTime[];
  /** Time with the function anywhere on the stack (callees included), each sample counted once per function; only functions `totalOf` keeps. */
  total: FrameTime[];
  /** Self time per package (node_modules/X, packages/X, node:internal, V8's buckets). */
  packages: FrameTime[];
}

/**
 * Where a profile's samples went: the `topN` functions by self and by total time, and self
 * time per package. `totalOf` keeps the total-time list to the code one cares for (by URL):
 * without it, Node's stream and event plumbing, on every stack, tops it.
 */
export function summarizeProfile(
  profile: CpuProfile,
  topN: number,
  totalOf: (url: string) => boolean = () => true,
): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const packages = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  let wallUs = 0;
  let idleUs = 0;
  for (let i = 0; i < samples.length; i++) {
    // timeDeltas[i] is the time since the previous sample: charge it to what was running at sample i
    const us = Math.max(0, deltas[i] ?? 0);
    wallUs += us;
    const leaf = byId.get(samples[i]!);
    if (!leaf) continue;
    const key = describe(leaf.callFrame);
    if (key === '(idle)') {
      idleUs += us;
      continue;
    }
    add(self, key, us);
    add(packages, packageOf(leaf.callFrame), us);
    const seen = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      const k = describe(frame);
      if (k === '(root)' || seen.has(k) || !totalOf(frame.url)) continue;
      seen.add(k);
      add(total, k, us);
    }
  }
  const busyUs = wallUs - idleUs;
  const top = (m: Map<string, number>, n: number): FrameTime[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([what, us]) => ({ what, ms: us / 1000, share: busyUs > 0 ? us / busyUs : 0 }));
  return {
    wallMs: wallUs / 1000,
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    self: top(self, topN),
    total: top(total, topN),
    packages: top(packages, topN),
  };
}

function add(m: Map<string, number>, key: string, us: number): void {
  m.set(key, (m.get(key) ?? 0) + us);
}

function describe(f: CallFrame): string {
  const name = f.functionName || '(anonymous)';
  if (!f.url) return name;
  // file:line as an editor opens it (the profile's lines are 0-based)
  const file = f.url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules|packages)\//, '$1/');
  return `${name} ${file}:${f.lineNumber + 1}`;
}

function packageOf(f: CallFrame): string {
  if (!f.url) return f.functionName.startsWith('(') ? f.functionName : `native (${f.functionName || 'anonymous'})`;
  if (f.url.startsWith('node:')) return 'node: (Node.js itself)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f.url);
  if (nm) return nm[1]!;
  const pkg = /packages\/([^/]+)\//.exec(f.url);
  return pkg ? `@rankd/${pkg[1]}` : f.url;
}

/** Keeps the raw profile (Chrome DevTools and speedscope open .cpuprofile files). */
export function saveProfile(profile: CpuProfile, file: string): void {
  writeFileSync(file, JSON.stringify(profile));
}

/** "name file:line 31% (412 ms)" lines for a note. */
export function formatFrames(frames: FrameTime[]): string {
  return frames.map((f) => `\`${f.what}\` ${(f.share * 100).toFixed(1)}% (${f.ms.toFixed(0)} ms)`).join('; ');
}
