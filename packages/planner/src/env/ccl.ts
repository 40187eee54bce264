// oneCCL: worker threads pinned where the planner reserved them, NICs by name, and
// the local rank/size given directly so that oneCCL needs no MPI launcher to learn them.
import type { Env, RankEnvContext } from './context.js';
import { nicValues } from './nic-values.js';

export function cclEnv(ctx: RankEnvContext, env: Env): void {
  if (ctx.commWorkers > 0) {
    env['CCL_WORKER_COUNT'] = String(ctx.commWorkers);
    // oneCCL reads the node's whole list and takes its local rank's slice
    env['CCL_WORKER_AFFINITY'] = ctx.nodeWorkerAffinity;
  }
  if (ctx.nics.length > 0) {
    env['CCL_MNIC'] = 'local';
    env['CCL_MNIC_NAME'] = nicValues(ctx.nics).devices;
  }
  env['CCL_LOCAL_RANK'] = String(ctx.localRank);
  env['CCL_LOCAL_SIZE'] = String(ctx.localWorldSize);
  env['CCL_PROCESS_LAUNCHER'] = 'none';
}
