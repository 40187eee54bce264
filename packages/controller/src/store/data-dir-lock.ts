// One controller per data directory. Two controllers on one directory would both write
// its SQLite store, its audit file and its PKI, and the second would replace the first's
// controller.json under its clients; so the lock is taken before anything in the
// directory is opened.
//
// Node has no flock(2) on a held descriptor, so the lock is a pid file, controller.pid,
// that names its holder by pid, start time (field 22 of /proc/PID/stat, in clock ticks
// since boot) and host. It appears whole or not at all: written to a private temporary
// file first, then link(2)ed to its name, which fails if the name exists. A holder is
// alive when a process with its pid exists and started at the same time; a dead pid, or
// a pid the kernel has since given to another program, leaves a stale lock, which the
// next controller takes over (and says so). A lock written on another host cannot be
// judged from here: it is refused, with the file to remove.
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
// the errors module, not the protocol's index: `rankd up` reads the lock without loading TypeBox
import { ErrorCode, RankdError } from '@rankd/protocol/errors';

export const LOCK_FILE = 'controller.pid';

export interface LockHolder {
  pid: number;
  /** Clock ticks after boot when the process started; null where /proc cannot say. */
  startTime: string | null;
  host: string;
}

export interface DataDirLock {
  path: string;
  /** Set when a stale lock was taken over: what it named, and why it was stale. */
  tookOver: { holder: LockHolder | null; why: string } | null;
  /** Removes the pid file, if it is still this process's. */
  release(): void;
}

/** The start time of a live process, or null when it does not exist (or /proc is absent). */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after the command name, which is in parentheses and may hold spaces
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : (fields[19] ?? null);
  } catch {
    return null;
  }
}

const HAS_PROC = processStartTime(process.pid) !== null;

/** Without /proc (not Linux), only whether the pid exists can be known. */
function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reads a lock file; null when it is absent or not a lock this code wrote. */
export function readLockHolder(path: string): LockHolder | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  try {
    const v = JSON.parse(text) as Partial<LockHolder>;
    if (typeof v.pid !== 'number' || !Number.isInteger(v.pid) || v.pid <= 0 || typeof v.host !== 'string') return null;
    return { pid: v.pid, startTime: typeof v.startTime === 'string' ? v.startTime : null, host: v.host };
  } catch {
    return null;
  }
}

/**
 * Why a holder no longer holds the lock ("pid 12 is not running", "pid 12 is now another
 * program"), or null while it does.
 */
export function staleness(holder: LockHolder): string | null {
  if (holder.host !== hostname()) return null;
  if (!HAS_PROC) return pidExists(holder.pid) ? null : `pid ${holder.pid} is not running`;
  const started = processStartTime(holder.pid);
  if (started === null) return `pid ${holder.pid} is not running`;
  if (holder.startTime !== null && started !== holder.startTime) return `pid ${holder.pid} is now another program`;
  return null;
}

/** Who holds a data directory's lock: nobody, a live controller, or a stale lock and why it is stale. */
export function lockState(
  dataDir: string,
): { holder: null } | { holder: LockHolder; stale: string | null; url: string | null } {
  const holder = readLockHolder(join(dataDir, LOCK_FILE));
  if (holder === null) return { holder: null };
  const stale = staleness(holder);
  return { holder, stale, url: stale === null ? holderUrl(dataDir, holder) : null };
}

/** A controller already runs on this data directory. */
export class DataDirLocked extends RankdError {
  override readonly name = 'DataDirLocked';
  constructor(
    readonly holder: LockHolder,
    readonly lockPath: string,
    /** From the holder's controller.json; null while it starts (it writes the file once it listens). */
    readonly url: string | null,
  ) {
    const where =
      holder.host === hostname()
        ? `pid ${holder.pid}`
        : `pid ${holder.pid} on host ${holder.host}; if none runs there, remove ${lockPath}`;
    super(
      ErrorCode.ControllerRunning,
      `a controller is already running (${where}) at ${url ?? '(an address not yet written: it is starting)'}`,
      {
        pid: holder.pid,
        host: holder.host,
        url,
      },
    );
  }
}

/** The URL a controller wrote to controller.json, if that file is the holder's. */
export function holderUrl(dataDir: string, holder: LockHolder): string | null {
  try {
    const state = JSON.parse(readFileSync(join(dataDir, 'controller.json'), 'utf8')) as {
      url?: unknown;
      pid?: unknown;
    };
    return state.pid === holder.pid && typeof state.url === 'string' ? state.url : null;
  } catch {
    return null;
  }
}

/** Takes the data directory's lock, or throws DataDirLocked. The directory must exist. */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  // a live holder is seen before anything is written here
  const first = readLockHolder(path);
  if (first !== null && first.host !== hostname()) throw new DataDirLocked(first, path, null);
  if (first !== null && staleness(first) === null) throw new DataDirLocked(first, path, holderUrl(dataDir, first));
  const me: LockHolder = { pid: process.pid, startTime: processStartTime(process.pid), host: hostname() };
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(me) + '\n', { mode: 0o600 });
  let tookOver: DataDirLock['tookOver'] = null;
  try {
    // a few rounds: each lost race is another starter that took or cleared the lock meanwhile
    for (let round = 0; round < 4; round++) {
      try {
        linkSync(tmp, path);
        return { path, tookOver, release: () => releaseIfMine(path, me) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = readLockHolder(path);
      if (holder !== null && holder.host !== hostname()) throw new DataDirLocked(holder, path, null);
      const why = holder === null ? 'the lock file is not one rankd wrote' : staleness(holder);
      if (why === null) throw new DataDirLocked(holder!, path, holderUrl(dataDir, holder!));
      const taken = moveAsideIfStale(path, holder);
      if (taken) tookOver = { holder, why };
    }
    throw new RankdError(ErrorCode.ControllerRunning, `cannot take ${path}: other controllers keep taking it`);
  } finally {
    unlinkSync(tmp);
  }
}

/**
 * Removes a stale lock file. It is renamed aside first (one rename wins), and checked
 * again there: if what was moved is a live holder's (another starter's, just written),
 * it is put back and the round starts over.
 */
function moveAsideIfStale(path: string, judged: LockHolder | null): boolean {
  const aside = `${path}.${process.pid}.stale`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  const moved = readLockHolder(aside);
  const same =
    moved === null
      ? judged === null
      : judged !== null && moved.pid === judged.pid && moved.startTime === judged.startTime;
  if (!same && moved !== null && staleness(moved) === null) {
    try {
      linkSync(aside, path);
    } catch {
      // a third starter holds it now: either way the lock is held
    }
    unlinkSync(aside);
    return false;
  }
  unlinkSync(aside);
  return true;
}

function releaseIfMine(path: string, me: LockHolder): void {
  const holder = readLockHolder(path);
  if (holder && holder.pid === me.pid && holder.startTime === me.startTime && holder.host === me.host) unlinkSync(path);
}
