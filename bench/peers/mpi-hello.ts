// mpi_hello, the program the MPI launch figure starts: MPI_Init, rank and size, one line,
// MPI_Finalize. One C source, built at figure start with each MPI's own wrapper: MPICH's
// (mpicc.mpich) for rankd's PMI-1 server and for hydra, Open MPI's (mpicc.openmpi) for
// its mpirun, since an Open MPI binary cannot speak PMI-1 and an MPICH one cannot speak PMIx.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from '../lib/process-timing.js';
import { which } from '../lib/which.js';

const SOURCE = `#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  printf("mpi_hello rank=%d size=%d\\n", rank, size);
  MPI_Finalize();
  return 0;
}
`;

export type Built = { path: string } | { why: string };

export interface MpiHello {
  /** The directory both binaries are in: the launchers run `./mpi_hello` from it. */
  dir: string;
  mpich: Built;
  openmpi: Built;
}

const COMPILE_TIMEOUT_MS = 120_000;

export async function buildMpiHello(dir: string): Promise<MpiHello> {
  mkdirSync(dir, { recursive: true });
  const source = path.join(dir, 'mpi_hello.c');
  writeFileSync(source, SOURCE);
  return {
    dir,
    mpich: await compile('mpicc.mpich', 'libmpich-dev', source, path.join(dir, 'mpi_hello')),
    openmpi: await compile('mpicc.openmpi', 'libopenmpi-dev', source, path.join(dir, 'mpi_hello_ompi')),
  };
}

async function compile(wrapper: string, pkg: string, source: string, out: string): Promise<Built> {
  if (!which(wrapper)) return { why: `${wrapper} is not installed (Debian package ${pkg})` };
  const run = await runProcess([wrapper, '-O2', '-o', out, source], { timeoutMs: COMPILE_TIMEOUT_MS });
  if (run.code !== 0) return { why: `${wrapper} failed: ${run.stderrTail.trim().split('\n').slice(-2).join(' | ')}` };
  return { path: out };
}

/**
 * Null when the output holds exactly one line per rank and each says the world has `size`
 * ranks; else what is wrong. A launcher without a PMI its ranks understand gives `size`
 * singletons of size 1 that all exit 0, which only this check catches.
 */
export function wrongHelloOutput(stdout: string, size: number): string | null {
  const seen = new Map<number, number>();
  for (const m of stdout.matchAll(/mpi_hello rank=(\d+) size=(\d+)/g)) {
    if (Number(m[2]) !== size) return `rank ${m[1]} said size=${m[2]}, not ${size}`;
    seen.set(Number(m[1]), (seen.get(Number(m[1])) ?? 0) + 1);
  }
  for (let r = 0; r < size; r++)
    if (seen.get(r) !== 1)
      return `rank ${r} printed ${seen.get(r) ?? 0} lines, not 1 (output: ${JSON.stringify(stdout.slice(0, 200))})`;
  if (seen.size !== size) return `ranks ${[...seen.keys()].join(',')} printed, expected 0–${size - 1}`;
  return null;
}
