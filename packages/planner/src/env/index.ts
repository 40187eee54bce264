// A rank's environment: every launcher convention's names at once, then the user's
// --env overrides on top.
import type { Env, RankEnvContext } from './context.js';
import { cclEnv } from './ccl.js';
import { fabricEnv } from './fabric.js';
import { gpuEnv } from './gpu.js';
import { mpiEnv } from './mpi.js';
import { ncclEnv } from './nccl.js';
import { deepspeedEnv, openmpEnv, torchEnv } from './torch.js';

export type { Env, RankEnvContext } from './context.js';

export function rankEnv(ctx: RankEnvContext, profile: 'default' | 'mpi', overrides: Readonly<Env> | undefined): Env {
  const env: Env = {};
  torchEnv(ctx, env);
  deepspeedEnv(ctx, env);
  openmpEnv(ctx, env);
  cclEnv(ctx, env);
  ncclEnv(ctx, env);
  fabricEnv(ctx, env);
  gpuEnv(ctx, env);
  if (profile === 'mpi') mpiEnv(ctx, env);
  if (overrides) Object.assign(env, overrides);
  return env;
}
