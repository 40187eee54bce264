// Which per-rank supervisor starts ranks on this node: the native one (native/*.c, built
// into dist/native/rank-supervisor at install), which also pins the rank itself with
// sched_setaffinity and set_mempolicy, or supervisor.pl behind numactl or taskset, where
// the native one could not be built. Both keep the same contract (argv layout, env
// records, answer line, spool files), so the rest of the library does not care which.
//
// RANKD_LAUNCHER=native|perl|auto in the agent's environment overrides the choice (an
// operator's escape hatch, and how tests take the perl path); the startup log and
// `rankd doctor` say which one is in use, and why when it is not the native one.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HELPER_ENV } from './caller-env.js';
import { RankErrorCode, rankError } from './errors.js';
import { findTool, isExecutableFile } from './program.js';

export type LauncherPreference = 'auto' | 'native' | 'perl';
export const LAUNCHER_PREFERENCES: readonly LauncherPreference[] = ['auto', 'native', 'perl'];

export interface Launcher {
  kind: 'native' | 'perl';
  /** What precedes the mode in the supervisor's argv: [binary] or [perl, supervisor.pl]. */
  command: string[];
  /** The supervisor calls setsid(2) itself, so the exec chain needs no setsid(1). */
  setsid: boolean;
  /** The supervisor applies --cpus/--mems itself: no numactl or taskset in the chain. */
  pins: boolean;
  /** Why the native launcher is not the one in use; absent when it is. */
  fallback?: string;
}

/** The answer of a working binary to --version; native/rank-supervisor.h's RS_VERSION. */
const NATIVE_VERSION = 'rank-supervisor 3';

export interface LauncherOptions {
  preference?: LauncherPreference;
  /** The native binary; defaults to the build's. A path that does not exist means "not built". */
  nativePath?: string;
  /** supervisor.pl, for the perl launcher. */
  scriptPath?: string;
}

/** dist/native/rank-supervisor of this package, whether this file runs from dist (or its bundle, dist/bundle/) or from src. */
export function defaultNativePath(): string {
  return fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../native/rank-supervisor' : '../../dist/native/rank-supervisor', import.meta.url));
}

/**
 * supervisor.pl: the sources' copy in a checkout (never a stale one), else the one a build
 * put in dist/ranks/. Both paths hold from dist/ranks/launcher.js and from the agent's
 * bundle, dist/bundle/daemon.js, one level under dist/ as well.
 */
export function defaultSupervisorPath(): string {
  for (const rel of ['../../src/ranks/supervisor.pl', '../ranks/supervisor.pl']) {
    const file = fileURLToPath(new URL(rel, import.meta.url));
    if (fs.existsSync(file)) return file;
  }
  throw rankError(RankErrorCode.SpawnFailed, 'supervisor.pl not found beside the agent build nor in its sources');
}

export function findPerl(): string {
  const perl = findTool('perl');
  if (!perl) throw rankError(RankErrorCode.SpawnFailed, 'perl is not installed (perl-base is Essential on Debian)');
  return perl;
}

/** The preference in RANKD_LAUNCHER, or auto; anything else is refused rather than guessed. */
export function envPreference(env: NodeJS.ProcessEnv = process.env): LauncherPreference {
  const v = env.RANKD_LAUNCHER;
  if (v === undefined || v === '') return 'auto';
  if ((LAUNCHER_PREFERENCES as readonly string[]).includes(v)) return v as LauncherPreference;
  throw rankError(RankErrorCode.SpawnFailed, `RANKD_LAUNCHER=${v}: expected one of ${LAUNCHER_PREFERENCES.join(', ')}`);
}

// One --version run per binary and process: it proves the binary runs on this machine
// (a build copied from another architecture does not), once, off every rank's start.
const checked = new Map<string, string | null>();

/** Null when the binary answers as expected, else why it cannot be used. */
export function nativeProblem(file: string): string | null {
  if (checked.has(file)) return checked.get(file)!;
  let problem: string | null = null;
  if (!fs.existsSync(file)) problem = `the native launcher is not built (${file} is missing; see the install's output)`;
  else if (!isExecutableFile(file)) problem = `${file} is not executable`;
  else {
    try {
      const out = execFileSync(file, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
      if (out !== NATIVE_VERSION) problem = `${file} --version answered "${out}", not "${NATIVE_VERSION}" (a build of other sources)`;
    } catch (err) {
      problem = `${file} does not run here: ${(err as Error).message.split('\n')[0]}`;
    }
  }
  checked.set(file, problem);
  return problem;
}

/** The launcher to use: native where it works (or is demanded), else perl with the reason. */
export function detectLauncher(opts: LauncherOptions = {}): Launcher {
  const preference = opts.preference ?? envPreference();
  const nativePath = opts.nativePath ?? defaultNativePath();
  let fallback = 'RANKD_LAUNCHER=perl asks for the perl supervisor';
  if (preference !== 'perl') {
    const problem = nativeProblem(nativePath);
    if (problem === null) return { kind: 'native', command: [nativePath], setsid: true, pins: true };
    if (preference === 'native') throw rankError(RankErrorCode.SpawnFailed, `the native launcher is required (RANKD_LAUNCHER=native) but ${problem}`);
    fallback = problem;
  }
  const perl = { kind: 'perl' as const, command: [findPerl(), opts.scriptPath ?? defaultSupervisorPath()], setsid: PERL_SYSCALLS[process.arch] !== undefined, pins: false };
  return { ...perl, fallback };
}

// Syscall numbers for the two calls perl has no builtin for: setsid(2) and prctl(2)
// (PR_SET_CHILD_SUBREAPER). Only architectures whose numbers are certain: x86-64 has its
// own table, the others listed use the generic one. Elsewhere the chain starts with
// setsid(1), one exec more, and the perl supervisor is no subreaper.
const PERL_SYSCALLS: Partial<Record<NodeJS.Architecture, { setsid: number; prctl: number }>> = {
  x64: { setsid: 112, prctl: 157 },
  arm64: { setsid: 157, prctl: 167 },
  riscv64: { setsid: 157, prctl: 167 },
  loong64: { setsid: 157, prctl: 167 },
};

/**
 * The environment the supervisor itself runs with, as root: fixed (caller-env.ts), never
 * the agent's nor the rank's (that one travels as data: on stdin, or in RANKDIR/env).
 */
export function supervisorEnv(launcher: Pick<Launcher, 'kind'>): Record<string, string> {
  const env: Record<string, string> = { ...HELPER_ENV };
  const nr = PERL_SYSCALLS[process.arch];
  if (launcher.kind === 'perl' && nr) {
    env.RANKD_SYSCALL_SETSID = String(nr.setsid);
    env.RANKD_SYSCALL_PRCTL = String(nr.prctl);
  }
  return env;
}

/** One line for logs and the doctor: which launcher, where, and why not the native one. */
export function describeLauncher(l: Launcher): string {
  if (l.kind === 'native') return `native rank launcher ${l.command[0]} (pins CPUs and memory itself)`;
  return `perl supervisor ${l.command[1]} with numactl or taskset${l.fallback ? `: ${l.fallback}` : ''}`;
}
