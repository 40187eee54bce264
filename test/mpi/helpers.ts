// What the MPI tests share: the fixtures, a build of the C programs with MPICH, what the
// Open MPI tests need (Debian's openmpi-bin and mpi4py), and the job view they read back.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { which } from '../cluster/harness/commands.js';

export const PROGRAMS = fileURLToPath(new URL('./programs/', import.meta.url));
export const PMI_CLIENT = join(PROGRAMS, 'pmi_client.py');
/** The Open MPI tests' program: an mpi4py allreduce (allreduce.c is MPICH's). */
export const MPI4PY_ALLREDUCE = join(PROGRAMS, 'allreduce.py');
/** Debian's interpreter: the fixtures need nothing else, and the rank's PATH is the agent's. */
export const PYTHON = '/usr/bin/python3';

export interface MpiJobView {
  id: string;
  state: string;
  reason: string;
  exitCode: number | null;
  mpi: string;
  ranks: Array<{
    rank: number;
    node: string;
    pid: number | null;
    state: string;
    exitCode: number | null;
    signal: string | null;
    planned: { cpus: number[] };
    actual: { cpus: number[]; verified: boolean } | null;
  }>;
}

/** Why MPICH programs cannot be built here, or null when mpicc.mpich is installed (or in CI). */
export function mpichMissing(): string | null {
  // CI installs mpich (scripts/test-deps.sh): there a missing one must fail, not skip
  if (process.env['CI'] === 'true') return null;
  return which('mpicc.mpich') ? null : 'mpicc.mpich is not installed (Debian: mpich, libmpich-dev); CI installs it';
}

/**
 * Why the Open MPI tests cannot run here, or null: they need mpirun.openmpi and orted
 * (Debian's openmpi-bin) and mpi4py under PYTHON (python3-mpi4py, built on Open MPI).
 * In CI (which installs them) never a reason to skip.
 */
export function openMpiUnsupported(): string | null {
  if (process.env['CI'] === 'true') return null;
  const mpirun = spawnSync('sh', ['-c', 'command -v mpirun.openmpi && command -v orted'], { encoding: 'utf8' });
  if (mpirun.status !== 0) return 'mpirun.openmpi and orted are not installed (Debian: openmpi-bin)';
  const py = spawnSync(PYTHON, ['-c', 'import mpi4py'], { encoding: 'utf8' });
  if (py.status !== 0) return `${PYTHON} cannot import mpi4py (Debian: python3-mpi4py)`;
  return null;
}

/** Builds test/mpi/programs/NAME.c with mpicc.mpich into a directory removed at teardown. */
export function buildMpich(t: Test, names: string[]): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-mpi-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const built: Record<string, string> = {};
  for (const name of names) {
    built[name] = join(dir, name);
    execFileSync('mpicc.mpich', ['-O1', '-o', built[name], join(PROGRAMS, `${name}.c`)], { stdio: 'pipe' });
  }
  return built;
}
