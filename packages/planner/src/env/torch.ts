// torchrun's variables (plus NODE_RANK, which torch.distributed.launch users read),
// DeepSpeed's launcher variables, and the OpenMP thread count of the compute CPUs.
import type { Env, RankEnvContext } from './context.js';

export function torchEnv(ctx: RankEnvContext, env: Env): void {
  env['RANK'] = String(ctx.rank);
  env['LOCAL_RANK'] = String(ctx.localRank);
  env['WORLD_SIZE'] = String(ctx.worldSize);
  env['LOCAL_WORLD_SIZE'] = String(ctx.localWorldSize);
  env['GROUP_RANK'] = String(ctx.nodeRank);
  env['NODE_RANK'] = String(ctx.nodeRank);
  // one role ("default") spans the whole job
  env['ROLE_RANK'] = String(ctx.rank);
  env['ROLE_WORLD_SIZE'] = String(ctx.worldSize);
  env['MASTER_ADDR'] = ctx.masterAddr;
  env['MASTER_PORT'] = String(ctx.masterPort);
}

export function deepspeedEnv(ctx: RankEnvContext, env: Env): void {
  env['CROSS_RANK'] = String(ctx.nodeRank);
  env['CROSS_SIZE'] = String(ctx.nodeCount);
  env['LOCAL_SIZE'] = String(ctx.localWorldSize);
}

export function openmpEnv(ctx: RankEnvContext, env: Env): void {
  env['OMP_NUM_THREADS'] = String(ctx.cpus.length);
}
