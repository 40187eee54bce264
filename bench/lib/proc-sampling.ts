// Memory and CPU of a running process, read from /proc the way `ps` and `top` do.
// CPU is the change of utime+stime over a window, so a process at rest is judged by
// what it burns while idle, not by its start-up.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { summarize, type Stat } from './stats.js';

export interface ProcSnapshot {
  rssKb: number;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
}

let clockTicks: number | undefined;

/** USER_HZ; 100 on every Linux this runs on, but asked rather than assumed. */
export function clockTicksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** null once the process is gone. */
export function readProc(pid: number): ProcSnapshot | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces; fields resume after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): utime is field 14, stime field 15.
    const cpuTicks = Number(fields[11]) + Number(fields[12]);
    const rss = readRss(pid);
    return rss ? { rssKb: rss.totalKb, cpuTicks } : null;
  } catch {
    return null;
  }
}

export interface Rss {
  totalKb: number;
  /** The anonymous part (heap, stacks, buffers)… */
  anonKb: number;
  /** …and the file-backed part (pages of the binary and libraries, shared between processes). */
  fileKb: number;
}

/** The RSS of one process from /proc/<pid>/status; null once it is gone. */
export function readRss(pid: number): Rss | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? 0);
  return { totalKb: kb('VmRSS'), anonKb: kb('RssAnon'), fileKb: kb('RssFile') };
}

/** The soft "Max open files" of a running process, from /proc/<pid>/limits; null once it is gone. */
export function openFileLimit(pid: number): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return m ? (m[1] === 'unlimited' ? Infinity : Number(m[1])) : null;
  } catch {
    return null;
  }
}

/** The pid and every descendant, found through each process's parent id. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // exited while we looked
    }
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

export interface UsageSummary {
  rssMb: Stat;
  /** CPU over the whole window, as a percentage of one core. */
  cpuPercent: number;
  /** CPU per sampling interval, to show bursts that the window average hides. */
  cpuPercentPerInterval: Stat;
  durationMs: number;
}

/**
 * Samples a process (and optionally its descendants) for durationMs. Bounded by
 * durationMs by construction; ends early, with an error, if the process exits.
 */
export async function sampleUsage(
  pid: number,
  opts: { durationMs: number; intervalMs: number; includeChildren?: boolean },
): Promise<UsageSummary> {
  const hz = clockTicksPerSecond();
  const read = (): ProcSnapshot | null => {
    const pids = opts.includeChildren ? processTree(pid) : [pid];
    let rssKb = 0;
    let cpuTicks = 0;
    let any = false;
    for (const p of pids) {
      const s = readProc(p);
      if (!s) continue;
      any = any || p === pid;
      rssKb += s.rssKb;
      cpuTicks += s.cpuTicks;
    }
    return any ? { rssKb, cpuTicks } : null;
  };
  const first = read();
  if (!first) throw new Error(`process ${pid} is not running`);
  const start = process.hrtime.bigint();
  const rss: number[] = [first.rssKb / 1024];
  const perInterval: number[] = [];
  let prev = first;
  let prevAt = start;
  let last = first;
  let lastAt = start;
  while (Number(process.hrtime.bigint() - start) / 1e6 < opts.durationMs) {
    await sleep(opts.intervalMs);
    const now = read();
    if (!now) throw new Error(`process ${pid} exited while being sampled`);
    const at = process.hrtime.bigint();
    rss.push(now.rssKb / 1024);
    const secs = Number(at - prevAt) / 1e9;
    perInterval.push(((now.cpuTicks - prev.cpuTicks) / hz / secs) * 100);
    prev = now;
    prevAt = at;
    last = now;
    lastAt = at;
  }
  const durationMs = Number(lastAt - start) / 1e6;
  return {
    rssMb: summarize(rss),
    cpuPercent: durationMs > 0 ? ((last.cpuTicks - first.cpuTicks) / hz / (durationMs / 1000)) * 100 : 0,
    cpuPercentPerInterval: perInterval.length > 0 ? summarize(perInterval) : summarize([0]),
    durationMs,
  };
}

export interface UsageWatch {
  /** Ends the watch: the peak RSS seen and the CPU used since it started. */
  stop(): { peakRssMb: number; cpuMs: number; cpuPercent: number; wallMs: number };
}

/**
 * Watches one process across an event of unknown length (a fence): RSS every intervalMs,
 * keeping the peak, and utime+stime at the start and at stop(). CPU is read in clock
 * ticks (10 ms at USER_HZ 100), so events of a few hundred ms carry that granularity.
 */
export function watchUsage(pid: number, intervalMs: number): UsageWatch {
  const hz = clockTicksPerSecond();
  const first = readProc(pid);
  if (!first) throw new Error(`process ${pid} is not running`);
  const start = process.hrtime.bigint();
  let peakKb = first.rssKb;
  const timer = setInterval(() => {
    const now = readProc(pid);
    if (now) peakKb = Math.max(peakKb, now.rssKb);
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      const last = readProc(pid);
      if (!last) throw new Error(`process ${pid} exited while being watched`);
      peakKb = Math.max(peakKb, last.rssKb);
      const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
      const cpuMs = ((last.cpuTicks - first.cpuTicks) / hz) * 1000;
      return { peakRssMb: peakKb / 1024, cpuMs, cpuPercent: wallMs > 0 ? (cpuMs / wallMs) * 100 : 0, wallMs };
    },
  };
}

/**
 * CPU of a set of processes across a window of unknown length, as a percentage of one
 * core: utime+stime of each at the start and at stop(). A process gone by stop() counts
 * what it had used at the start, i.e. nothing for the window.
 */
export function watchCpu(pids: readonly number[]): { stop(): { cpuPercent: number; wallMs: number } } {
  const hz = clockTicksPerSecond();
  const first = new Map(pids.map((pid) => [pid, readProc(pid)?.cpuTicks ?? 0]));
  const start = process.hrtime.bigint();
  return {
    stop() {
      const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
      let ticks = 0;
      for (const [pid, before] of first) ticks += Math.max(0, (readProc(pid)?.cpuTicks ?? before) - before);
      return { cpuPercent: wallMs > 0 ? (ticks / hz / (wallMs / 1000)) * 100 : 0, wallMs };
    },
  };
}
