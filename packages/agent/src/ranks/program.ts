// Finding programs the way execvp(3) will, so that a missing program is a clear error
// from start() instead of "exit 127" (or numactl's own exit 1) found later in a log.
import fs from 'node:fs';
import path from 'node:path';
import { RankErrorCode, rankError } from './errors.js';

/** glibc's execvp falls back to confstr(_CS_PATH) when PATH is unset. */
export const DEFAULT_EXEC_PATH = '/bin:/usr/bin';

/** The identity whose permission bits decide whether a file is executable. */
export interface ExecIdentity {
  uid: number;
  gid: number;
  groups: number[];
}

export function isExecutableFile(file: string, who?: ExecIdentity): boolean {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return false;
  }
  if (!st.isFile()) return false;
  if (!who) return (st.mode & 0o111) !== 0;
  // root may execute a file when any execute bit is set
  if (who.uid === 0) return (st.mode & 0o111) !== 0;
  if (st.uid === who.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === who.gid || who.groups.includes(st.gid)) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/** First executable `name` on a colon-separated search path; empty entries mean the cwd, as in execvp. */
export function searchPath(name: string, searchList: string, cwd: string, who?: ExecIdentity): string | null {
  for (const dir of searchList.split(':')) {
    const candidate = path.resolve(cwd, dir === '' ? '.' : dir, name);
    if (isExecutableFile(candidate, who)) return candidate;
  }
  return null;
}

/**
 * Resolves argv[0] for a rank: with a slash it is a path (relative to the rank's cwd),
 * otherwise it is looked up on the rank's PATH. Throws RANKD_RANK_PROGRAM_NOT_FOUND.
 * argv is not rewritten: the program still sees argv[0] as given.
 */
export function resolveProgram(argv0: string, envPath: string | undefined, cwd: string, who?: ExecIdentity): string {
  if (argv0.includes('/')) {
    const file = path.resolve(cwd, argv0);
    if (isExecutableFile(file, who)) return file;
    throw rankError(RankErrorCode.ProgramNotFound, `${argv0}: no such executable file`, { argv0 });
  }
  const found = searchPath(argv0, envPath ?? DEFAULT_EXEC_PATH, cwd, who);
  if (found) return found;
  throw rankError(RankErrorCode.ProgramNotFound, `${argv0}: not found on PATH=${envPath ?? DEFAULT_EXEC_PATH}`, { argv0 });
}

/** Where the agent looks for its own helpers (numactl, taskset, setsid, perl, prlimit). */
export function agentToolPath(): string {
  return [process.env.PATH ?? '', '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'].filter(Boolean).join(':');
}

/** Absolute path of an agent helper, or null. */
export function findTool(name: string): string | null {
  return searchPath(name, agentToolPath(), '/');
}
