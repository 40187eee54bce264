// RDMA registers memory with the NIC, and registered memory is locked memory: with the
// usual 8 MiB RLIMIT_MEMLOCK, verbs fail with "Cannot allocate memory". Ranks need it
// unlimited. Rather than adding a prlimit exec to every rank's start, the agent raises its
// own limit once, and every supervisor and rank inherits it through fork and exec.
// Raising the hard limit takes CAP_SYS_RESOURCE (root in a container may lack it); without
// it the soft limit is raised to the hard one, which anyone may do, and the job is told.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { findTool } from './program.js';

const execFileAsync = promisify(execFile);

const CAP_SYS_RESOURCE = 24n;

export interface MemlockState {
  /** "unlimited" or the soft limit in bytes, as ranks will inherit it. */
  soft: string;
  hard: string;
  unlimited: boolean;
  /** Why it is not unlimited, for the job's warnings. */
  warning?: string;
}

/** The agent's RLIMIT_MEMLOCK as /proc/self/limits shows it. */
export function readMemlock(): { soft: string; hard: string } {
  const text = fs.readFileSync('/proc/self/limits', 'utf8');
  const line = text.split('\n').find((l) => l.startsWith('Max locked memory'));
  const parts = line?.slice('Max locked memory'.length).trim().split(/\s+/) ?? [];
  return { soft: parts[0] ?? 'unknown', hard: parts[1] ?? 'unknown' };
}

/** CAP_SYS_RESOURCE in the effective set: the right to raise a hard limit (uid 0 alone is not enough). */
export function mayRaiseLimits(): boolean {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const capEff = /^CapEff:\s*([0-9a-f]+)/m.exec(status)?.[1];
  return capEff !== undefined && ((BigInt('0x' + capEff) >> CAP_SYS_RESOURCE) & 1n) === 1n;
}

let pending: Promise<MemlockState> | undefined;

/** Raises the agent's own RLIMIT_MEMLOCK to unlimited where it may, once per process. */
export function ensureMemlockUnlimited(): Promise<MemlockState> {
  pending ??= raise();
  return pending;
}

async function raise(): Promise<MemlockState> {
  let { soft, hard } = readMemlock();
  if (soft === 'unlimited' && hard === 'unlimited') return { soft, hard, unlimited: true };
  const prlimit = findTool('prlimit');
  const privileged = mayRaiseLimits();
  const target = privileged ? 'unlimited:unlimited' : soft !== hard ? `${hard}:${hard}` : null;
  if (prlimit && target) {
    try {
      await execFileAsync(prlimit, ['--pid', String(process.pid), `--memlock=${target}`], { timeout: 10_000 });
    } catch {
      // reported below through the limit still being finite
    }
    ({ soft, hard } = readMemlock());
    if (soft === 'unlimited' && hard === 'unlimited') return { soft, hard, unlimited: true };
  }
  const why = !privileged
    ? 'the agent lacks CAP_SYS_RESOURCE'
    : prlimit
      ? 'prlimit failed'
      : 'prlimit is not installed';
  return {
    soft,
    hard,
    unlimited: false,
    warning: `RLIMIT_MEMLOCK stays ${soft} (${why}); RDMA memory registration may fail`,
  };
}
