// The rank supervisor (packages/agent/native/*.c, built into dist/native/rank-supervisor
// at install): where it is, which version it is, and whether it can start ranks here.
// It is the agent's only way to start a rank (and an exec, a shell, mpirun's daemons), so
// an agent without a working one still runs (it enrolls, reports facts, answers the
// doctor) but refuses every start with an error that names the fix: supervisorArgv checks.
// The startup log and `rankd doctor` (check `launcher`) say which binary and version, or
// why there is none.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RankErrorCode, rankError } from './errors.js';
import { isExecutableFile } from './program.js';

export interface SupervisorBinary {
  path: string;
  /** What it answered to --version ("4"), or null when it did not answer as one. */
  version: string | null;
  /** Why it cannot start ranks here; null when it can. */
  problem: string | null;
}

/** What an operator does about a missing or broken supervisor. */
export const SUPERVISOR_FIX =
  'install a C compiler (Debian: apt-get install gcc) and run `npm run build` where the agent is built, ' +
  'then reinstall and restart the agent';

/** dist/native/rank-supervisor of this package, from dist (or its bundle, dist/bundle/) or from src. */
export function defaultSupervisorPath(): string {
  const rel = import.meta.url.includes('/dist/') ? '../native/rank-supervisor' : '../../dist/native/rank-supervisor';
  return fileURLToPath(new URL(rel, import.meta.url));
}

/**
 * RS_VERSION of native/version.h, the one place it is written: the sources' header in a
 * checkout (so a binary older than its sources is told apart), else the copy the build put
 * beside the binary (an installed copy has dist only). Both paths hold from src/ranks/,
 * dist/ranks/ and the bundle, dist/bundle/.
 */
export function expectedSupervisorVersion(): string {
  for (const rel of ['../../native/version.h', '../native/version.h']) {
    const file = fileURLToPath(new URL(rel, import.meta.url));
    if (!fs.existsSync(file)) continue;
    const m = /^#define RS_VERSION (\d+)$/m.exec(fs.readFileSync(file, 'utf8'));
    if (!m) throw rankError(RankErrorCode.SpawnFailed, `${file} has no "#define RS_VERSION N" line`);
    return m[1]!;
  }
  throw rankError(RankErrorCode.SpawnFailed, "native/version.h is in neither the agent's sources nor its dist/native/");
}

// One --version run per binary and process: it proves the binary runs on this machine (a
// build copied from another architecture does not) and is of these sources, once, off
// every rank's start.
const checked = new Map<string, SupervisorBinary>();

/** The supervisor at `file` (the build's by default), checked once per process. */
export function findSupervisor(file = defaultSupervisorPath()): SupervisorBinary {
  let found = checked.get(file);
  if (!found) {
    found = check(file);
    checked.set(file, found);
  }
  return found;
}

function check(file: string): SupervisorBinary {
  const none = (problem: string): SupervisorBinary => ({ path: file, version: null, problem });
  if (!fs.existsSync(file)) return none(`the rank supervisor is not built (${file} is missing; the build said why)`);
  if (!isExecutableFile(file)) return none(`${file} is not executable`);
  let expected: string;
  try {
    expected = expectedSupervisorVersion();
  } catch (err) {
    return none((err as Error).message);
  }
  let out: string;
  try {
    const stdio: ['ignore', 'pipe', 'pipe'] = ['ignore', 'pipe', 'pipe'];
    out = execFileSync(file, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio }).trim();
  } catch (err) {
    return none(`${file} does not run here: ${(err as Error).message.split('\n')[0]}`);
  }
  const version = /^rank-supervisor (\d+)$/.exec(out)?.[1] ?? null;
  if (version !== expected) {
    const problem = `${file} --version answered "${out}", not "rank-supervisor ${expected}" (a build of other sources)`;
    return { path: file, version, problem };
  }
  return { path: file, version, problem: null };
}

/** Refuses to go on without a working supervisor: the error every start path gives, naming the fix. */
export function assertSupervisorUsable(s: SupervisorBinary): void {
  if (s.problem === null) return;
  throw rankError(RankErrorCode.SpawnFailed, `this node cannot start ranks: ${s.problem}; ${SUPERVISOR_FIX}`);
}

/** One line for the startup log: which supervisor and version, or why there is none. */
export function describeSupervisor(s: SupervisorBinary): string {
  if (s.problem === null) return `rank supervisor ${s.version} at ${s.path} (pins CPUs and memory itself)`;
  return `no usable rank supervisor, ranks will be refused: ${s.problem}; ${SUPERVISOR_FIX}`;
}
