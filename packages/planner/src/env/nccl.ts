// NCCL and gloo. NCCL_IB_HCA takes prefixes unless the list starts with "=", and
// "mlx5_1" would also match mlx5_10…mlx5_19, so the exact form is always used; the
// same holds for NCCL_SOCKET_IFNAME ("eth1" would match "eth10").
import type { Env, RankEnvContext } from './context.js';
import { nicValues } from './nic-values.js';

export function ncclEnv(ctx: RankEnvContext, env: Env): void {
  if (ctx.nics.length > 0) {
    const v = nicValues(ctx.nics);
    env['NCCL_IB_HCA'] = v.exactHca;
    // NCCL takes one index for every port: export it only when all RoCE ports agree
    if (v.sharedGidIndex !== null) env['NCCL_IB_GID_INDEX'] = String(v.sharedGidIndex);
  }
  if (ctx.socketIfname) {
    env['NCCL_SOCKET_IFNAME'] = '=' + ctx.socketIfname;
    env['GLOO_SOCKET_IFNAME'] = ctx.socketIfname;
  }
}
