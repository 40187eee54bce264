// Small readers of /proc/<pid>. Every kill in this library goes to a pid, pgid or cgroup
// the library recorded itself; these helpers tell whether that record still names the
// same live process.
import fs from 'node:fs';

export interface ProcStat {
  state: string;
  pgid: number;
  session: number;
  /** Clock ticks after boot; with the pid, this names one process for the life of the system. */
  startTicks: number;
}

/** /proc/<pid>/stat, or null when the process is gone. */
export function readProcStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // comm may hold spaces and parentheses: fields are counted after the last ')'
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: rest[0] ?? '?', pgid: Number(rest[2]), session: Number(rest[3]), startTicks: Number(rest[19]) };
}

/** True when `pid` is alive (not a zombie) and, when given, started at `startTicks`. */
export function isAlive(pid: number, startTicks?: number | null): boolean {
  const st = readProcStat(pid);
  if (!st || st.state === 'Z' || st.state === 'X') return false;
  return startTicks == null || st.startTicks === startTicks;
}

/** True while any process (zombies included) is in process group `pgid`. */
export function groupExists(pgid: number): boolean {
  // kill(-0) and kill(-1) mean "my own group" and "everyone": never a rank's group
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    // EPERM means someone is there that we may not signal: it still exists
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Sends `signal` to process group `pgid`; false when the group is empty. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * /proc/<pid>/cmdline as argv; null when the process is gone. Empty for a zombie, and
 * also for a live process in the middle of an execve (new memory map, arguments not yet
 * copied): tell the two apart with readProcStat.
 */
export function readCmdline(pid: number): string[] | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return null;
  }
  if (text === '') return [];
  return (text.endsWith('\0') ? text.slice(0, -1) : text).split('\0');
}

/** Named fields of /proc/<pid>/status, or null when the process is gone. */
export function readStatusFields(pid: number, names: readonly string[]): Record<string, string> | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    const key = line.slice(0, colon);
    if (names.includes(key)) out[key] = line.slice(colon + 1).trim();
  }
  return out;
}

/** The first line of /proc/<pid>/numa_maps names the task's memory policy for mappings without their own. */
export function readTaskMemPolicy(pid: number): string | null {
  try {
    const fd = fs.openSync(`/proc/${pid}/numa_maps`, 'r');
    try {
      const buf = Buffer.alloc(512);
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      const first = buf.subarray(0, n).toString('utf8').split('\n')[0] ?? '';
      return first.split(' ')[1] ?? null;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}
