// Finding programs the way execvp(3) will, so that a missing program is a clear error
// from start() instead of "exit 127" found later in a log. The
// error says it in a shell's words, and its code carries the status a shell gives it
// (errors.ts, shellStatusOf): 127 for a program that is not there, 126 for one that is
// there but cannot be executed.
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
  return execProblem(file, who) === null;
}

/** Why `who` cannot execute `file`, in the words of execve's errno as a shell prints them, or null when it can. */
function execProblem(file: string, who?: ExecIdentity): { missing: boolean; words: string } | null {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    // only ENOENT is "not there" to a shell (127); any other failure is 126, as bash has it
    return { missing: code === 'ENOENT', words: STAT_ERRORS[code] ?? code };
  }
  if (st.isDirectory()) return { missing: false, words: 'Is a directory' };
  if (!st.isFile() || !mayExecute(st, who)) return { missing: false, words: 'Permission denied' };
  return null;
}

function mayExecute(st: fs.Stats, who?: ExecIdentity): boolean {
  // root may execute a file when any execute bit is set
  if (!who || who.uid === 0) return (st.mode & 0o111) !== 0;
  if (st.uid === who.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === who.gid || who.groups.includes(st.gid)) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/** strerror(3)'s words for what stat(2) of a program's path can fail with. */
const STAT_ERRORS: Record<string, string> = {
  ENOENT: 'No such file or directory',
  ENOTDIR: 'Not a directory',
  ELOOP: 'Too many levels of symbolic links',
  ENAMETOOLONG: 'File name too long',
  EACCES: 'Permission denied',
};

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
 * otherwise it is looked up on the rank's PATH. Throws RANKD_RANK_PROGRAM_NOT_FOUND (a
 * shell's 127) or RANKD_RANK_PROGRAM_NOT_EXECUTABLE (126), in bash's words:
 * `foo: command not found`, `./a.out: No such file or directory`, `./run.sh: Permission
 * denied`, `./build: Is a directory`. argv is not rewritten: the program still sees argv[0] as given.
 */
export function resolveProgram(argv0: string, envPath: string | undefined, cwd: string, who?: ExecIdentity): string {
  const searchList = envPath ?? DEFAULT_EXEC_PATH;
  if (argv0.includes('/')) {
    const file = path.resolve(cwd, argv0);
    const problem = execProblem(file, who);
    if (!problem) return file;
    throw cannotRun(argv0, problem, { argv0 });
  }
  const found = searchPath(argv0, searchList, cwd, who);
  if (found) return found;
  // as bash: a file of that name on the PATH that cannot be executed is what is reported
  // (126), a directory of that name is passed over, and nothing at all is "command not found"
  for (const dir of searchList.split(':')) {
    const problem = execProblem(path.resolve(cwd, dir === '' ? '.' : dir, argv0), who);
    if (problem && !problem.missing && problem.words === 'Permission denied')
      throw cannotRun(argv0, problem, { argv0, path: searchList });
  }
  throw cannotRun(argv0, { missing: true, words: 'command not found' }, { argv0, path: searchList });
}

function cannotRun(
  argv0: string,
  problem: { missing: boolean; words: string },
  details: Record<string, unknown>,
): Error {
  return rankError(
    problem.missing ? RankErrorCode.ProgramNotFound : RankErrorCode.ProgramNotExecutable,
    `${argv0}: ${problem.words}`,
    details,
  );
}

/** Where the agent looks for its own helpers (prlimit, getent, mpirun, orted, …). */
export function agentToolPath(): string {
  return [process.env.PATH ?? '', '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin']
    .filter(Boolean)
    .join(':');
}

/** Absolute path of an agent helper, or null. */
export function findTool(name: string): string | null {
  return searchPath(name, agentToolPath(), '/');
}
