// The directory of one instance (a Slurm job, a set of pods) on one host. Each daemon of
// the instance on that host keeps its files in a subdirectory of its own, and the last one
// to stop removes the whole directory, the caller's client config with it. Removing first
// and looking second is what makes "the last one" safe without a lock: whichever daemon
// looks after every subdirectory is gone sees it so.
//
// Only a directory that rankd made (it holds MARKER) is ever removed whole: a --work-dir
// that names the user's own directory loses only the subdirectories rankd made there (each
// holds DAEMON_MARKER). The directory gets secrets (the CA key, the API token, the client
// config), and its default path (/tmp/rankd-JOBID) is one anybody can guess: a directory
// that another user owns or can write to, or a symlink another user made, is refused, never used.
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { InstanceErrorCode, RankdError } from '@rankd/protocol/errors';
import { isRankdProcess } from './daemon-pids.js';

const MARKER = '.rankd-instance';
/** In each daemon's subdirectory: the pid of the daemon that holds it. */
const DAEMON_MARKER = '.rankd-daemon';
export const CONTROLLER_SUBDIR = 'controller';

export function agentSubdir(workDir: string, node: string): string {
  return join(workDir, `agent-${node}`);
}

function isDaemonEntry(name: string): boolean {
  return name === CONTROLLER_SUBDIR || name.startsWith('agent-');
}

function unsafe(message: string): RankdError {
  return new RankdError(InstanceErrorCode.WorkDirUnsafe, message);
}

/** Refuses a work directory that is not the invoking user's own, closed to others. */
function checkOwnDir(workDir: string): void {
  const uid = process.getuid?.() ?? -1;
  const link = lstatSync(workDir);
  // a symlink is followed only when this user made it: /tmp/rankd-JOBID may be another user's
  if (link.isSymbolicLink() && link.uid !== uid)
    throw unsafe(`${workDir} is a symlink of uid ${link.uid}, not yours (uid ${uid}): choose another --work-dir`);
  const dir = link.isSymbolicLink() ? statSync(workDir) : link;
  if (!dir.isDirectory()) throw unsafe(`${workDir} is not a directory`);
  if (dir.uid !== uid)
    throw unsafe(`${workDir} belongs to uid ${dir.uid}, not to you (uid ${uid}): choose another --work-dir`);
  if ((dir.mode & 0o022) !== 0)
    throw unsafe(
      `${workDir} can be written by others (mode ${(dir.mode & 0o777).toString(8)}): "chmod go-w ${workDir}", ` +
        'or choose another --work-dir',
    );
}

/**
 * Makes the work directory (mode 0700, marked as rankd's) when it does not exist, and checks
 * that it is the invoking user's own directory that no one else can write to.
 */
export function ensureWorkDir(workDir: string): void {
  mkdirSync(dirname(workDir), { recursive: true, mode: 0o700 });
  try {
    // not recursive: a directory someone else made in the meantime is an EEXIST, then checked
    mkdirSync(workDir, { mode: 0o700 });
    writeFileSync(join(workDir, MARKER), 'made by rankd: removed when the instance stops on this host\n', {
      mode: 0o600,
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  checkOwnDir(workDir);
}

/** The pid written in `dir`'s `file` (a daemon's subdirectory's marker, the start lock), or null. */
function holderOf(dir: string, file = DAEMON_MARKER): number | null {
  try {
    return Number.parseInt(readFileSync(join(dir, file), 'utf8'), 10);
  } catch {
    return null;
  }
}

/**
 * A fresh subdirectory of the work directory for this daemon (process.pid): what a daemon
 * killed earlier left there is not reused. Refused when a running rankd daemon holds it, or
 * when rankd did not make it (the user's own `controller/` in a --work-dir of theirs).
 */
/** In a daemon's subdirectory that --keep left: never cleared by a later start. */
const KEPT_MARKER = '.kept';

/** A daemon stopping with --keep marks its subdirectory, which freshSubdir then refuses to clear. */
export function markKept(dir: string): void {
  writeFileSync(join(dir, KEPT_MARKER), 'kept by rankd --keep: remove this directory when done with it\n', {
    mode: 0o600,
  });
}

export function freshSubdir(dir: string): string {
  let found;
  try {
    found = lstatSync(dir);
  } catch {
    found = null;
  }
  // a symlink is removed, never followed (rmSync does not follow links)
  if (found && !found.isSymbolicLink()) {
    const holder = found.isDirectory() ? holderOf(dir) : null;
    if (holder !== null && holder !== process.pid && isRankdProcess(holder))
      throw new RankdError(
        InstanceErrorCode.WorkDirInUse,
        `${dir} is held by the running rankd daemon pid ${holder}: stop it first, or use another --work-dir or --name`,
      );
    // what a daemon left on purpose (--keep) is the user's, not a leftover to clear
    if (found.isDirectory() && existsSync(join(dir, KEPT_MARKER)))
      throw unsafe(`${dir} was kept with --keep: remove it when its logs are read, or use another --work-dir`);
    if (holder === null && !readdirSync(dirname(dir)).includes(MARKER))
      throw unsafe(
        `${dir} exists and rankd did not make it; ${dirname(dir)} is not a directory rankd made: ` +
          'choose another --work-dir',
      );
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o700 });
  writeFileSync(join(dir, DAEMON_MARKER), `${process.pid}\n`, { mode: 0o600 });
  return dir;
}

/**
 * A daemon of the instance stops: its own subdirectory goes (unless kept), then the work
 * directory, when rankd made it and no daemon's subdirectory is left in it. `own` is the
 * subdirectory freshSubdir gave this process; any other path is left alone.
 */
export function leaveWorkDir(workDir: string, own: string | null): void {
  // only the subdirectory this daemon holds (freshSubdir), whatever path a caller passes
  if (
    own &&
    dirname(resolve(own)) === resolve(workDir) &&
    isDaemonEntry(basename(own)) &&
    holderOf(own) === process.pid
  )
    rmSync(own, { recursive: true, force: true });
  let entries: string[];
  try {
    entries = readdirSync(workDir);
  } catch {
    return;
  }
  if (!entries.includes(MARKER) || entries.some(isDaemonEntry)) return;
  // an `up` starting the next instance here holds the start lock: the directory is its now
  const release = tryStartLock(workDir);
  if (!release) return;
  if (readdirSync(workDir).some(isDaemonEntry)) return release();
  rmSync(workDir, { recursive: true, force: true });
}

const START_LOCK = 'starting.pid';

/**
 * The start lock of a work directory: held by the `up` that starts an instance there, and by
 * the daemon that removes it, so that neither removes what the other is making. A file with
 * the holder's pid, written whole and linked into place; a holder that is no longer a rankd
 * process does not hold it. Re-entrant: this process's own lock is taken again. Resolves with
 * its release, or null while another rankd process holds it.
 */
export function tryStartLock(workDir: string): (() => void) | null {
  const path = join(workDir, START_LOCK);
  const release = () => {
    if (holderOf(workDir, START_LOCK) === process.pid) rmSync(path, { force: true });
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    const mine = `${path}.${process.pid}`;
    try {
      writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 });
      linkSync(mine, path);
      return release;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return null; // the directory is gone: nothing to guard
      if (code !== 'EEXIST') throw err;
    } finally {
      rmSync(mine, { force: true });
    }
    const holder = holderOf(workDir, START_LOCK);
    if (holder === process.pid) return release;
    if (holder !== null && isRankdProcess(holder)) return null;
    rmSync(path, { force: true }); // its holder ended without releasing it
  }
  return null;
}

/** A new work directory under a temporary one (`prefix` + random), made and marked as rankd's. */
export function newWorkDir(prefix: string): string {
  const dir = mkdtempSync(prefix);
  writeFileSync(join(dir, MARKER), 'made by rankd: removed when the instance stops on this host\n', { mode: 0o600 });
  return dir;
}
