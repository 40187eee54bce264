// The MPI shims, for programs that read their rank from PMI, Open MPI or Intel MPI
// variables (only with --env-profile mpi). SLURM_* is never exported: programs that
// see it believe they run inside a Slurm step.
import type { Env, RankEnvContext } from './context.js';

export function mpiEnv(ctx: RankEnvContext, env: Env): void {
  env['PMI_RANK'] = String(ctx.rank);
  env['PMI_SIZE'] = String(ctx.worldSize);
  env['OMPI_COMM_WORLD_RANK'] = String(ctx.rank);
  env['OMPI_COMM_WORLD_SIZE'] = String(ctx.worldSize);
  env['OMPI_COMM_WORLD_LOCAL_RANK'] = String(ctx.localRank);
  env['OMPI_COMM_WORLD_LOCAL_SIZE'] = String(ctx.localWorldSize);
  env['OMPI_COMM_WORLD_NODE_RANK'] = String(ctx.localRank);
  env['MPI_LOCALRANKID'] = String(ctx.localRank);
  env['MPI_LOCALNRANKS'] = String(ctx.localWorldSize);
}
