// The fabric layers under MPI and oneCCL: PSM3 (one device), UCX (device:port list)
// and libfabric's verbs provider (the netdev of the rank's first RDMA port).
import type { Env, RankEnvContext } from './context.js';
import { nicValues } from './nic-values.js';

export function fabricEnv(ctx: RankEnvContext, env: Env): void {
  if (ctx.nics.length === 0) return;
  const v = nicValues(ctx.nics);
  env['PSM3_NIC'] = v.firstDevice!;
  env['UCX_NET_DEVICES'] = v.devicePorts;
  if (v.firstNetdev) env['FI_VERBS_IFACE'] = v.firstNetdev;
}
