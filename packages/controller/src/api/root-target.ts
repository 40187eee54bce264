// A request that names root as its Unix user will run as root on every agent that takes
// it, so the controller refuses its loader variables at submission (RANKD_ROOT_LOADER_ENV,
// protocol's loader-env.ts). A request that names nobody runs as each agent's own user,
// which only the agent knows: there the agent's own check is the one that holds, and it
// holds for every root target whatever its name.
import { refuseLoaderEnv } from '@rankd/protocol';

/** The names that are root on every node: the name and the uid. */
const ROOT_NAMES = new Set(['root', '0']);

export function refuseRootLoaderEnv(
  user: string | undefined,
  env: Record<string, string> | undefined,
  what: string,
): void {
  if (user !== undefined && ROOT_NAMES.has(user)) refuseLoaderEnv(env, what);
}
