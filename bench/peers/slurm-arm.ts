// A local Slurm for one figure: started when srun is installed, stopped when the figure
// ends. A Slurm that will not start becomes the reason its arm is not measured.
import path from 'node:path';
import type { BenchContext } from '../lib/figure.js';
import { which } from '../lib/which.js';
import { startLocalSlurm, type LocalSlurm } from './slurm.js';

export type SlurmOrWhy = { slurm: LocalSlurm } | { why: string };

export async function slurmForFigure(ctx: BenchContext, figure: string): Promise<SlurmOrWhy> {
  if (!which('srun') || !which('slurmctld') || !which('slurmd'))
    return { why: 'Slurm is not installed (Debian package slurm-wlm)' };
  try {
    return { slurm: await startLocalSlurm(path.join(ctx.tmpDir, `slurm-${figure}`), ctx.log) };
  } catch (err) {
    return { why: `local Slurm did not start: ${(err as Error).message}` };
  }
}
