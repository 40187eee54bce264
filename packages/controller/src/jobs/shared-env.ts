// One copy of what a node's ranks share in their environment.
//
// Most of a rank's environment is its job's: world size, rendezvous, fabric and NCCL
// settings; only a few variables (RANK, LOCAL_RANK, CPU and device lists) differ. Sent
// per rank, the shared part would repeat for every rank of a node: most of a big job's
// job.start bytes, and of the controller's time to build and write them.
import type { RankLaunch } from '@rankd/protocol';

/**
 * Moves the variables every launch has with the same value out of each launch's env and
 * returns them: the agent gives each rank `{ ...shared, ...launch.env }`, the same
 * environment as before. A single launch keeps its env as it is.
 */
export function hoistSharedEnv(launches: RankLaunch[]): Record<string, string> {
  const [first, ...rest] = launches;
  if (!first || rest.length === 0) return {};
  const shared: Record<string, string> = {};
  for (const [name, value] of Object.entries(first.env)) {
    if (rest.every((l) => l.env[name] === value)) shared[name] = value;
  }
  for (const launch of launches) {
    const own: Record<string, string> = {};
    for (const [name, value] of Object.entries(launch.env)) if (!(name in shared)) own[name] = value;
    launch.env = own;
  }
  return shared;
}
