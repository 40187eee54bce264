// GPU visibility. Indexes are in PCI bus order, so CUDA must count the same way.
import type { Env, RankEnvContext } from './context.js';

export function gpuEnv(ctx: RankEnvContext, env: Env): void {
  if (ctx.gpuBind !== 'visible') return;
  env['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID';
  // an empty list hides every GPU from a rank that was given none
  env['CUDA_VISIBLE_DEVICES'] = ctx.gpus.join(',');
}
