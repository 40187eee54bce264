// Everything decided before a rank's directory exists: who it runs as, where, with which
// environment, which program, pinned how (the launcher's own options or a wrapper).
// Anything wrong here is a clear error from start() and leaves no trace on the node.
import fs from 'node:fs';
import { refuseLoaderEnvForRoot } from './caller-env.js';
import { RankErrorCode, rankError } from './errors.js';
import type { IdentityResolver, RankIdentity } from './identity.js';
import type { Launcher } from './launcher.js';
import { ensureMemlockUnlimited } from './memlock.js';
import { detectPinningTool, pinnedArgv, type PinnedArgv, type PinningPreference } from './pinning.js';
import { resolveProgram } from './program.js';
import type { RankLaunch } from './rank-spec.js';

export interface PreparedRank {
  identity: RankIdentity;
  cwd: string;
  env: Record<string, string>;
  pin: PinnedArgv;
  warnings: string[];
}

export async function prepareRank(launch: RankLaunch, identities: IdentityResolver, pinning: PinningPreference, launcher: Launcher): Promise<PreparedRank> {
  const identity = await identities.resolve(launch.user);
  // a root rank never drops privileges: nothing may act in its loader (caller-env.ts)
  refuseLoaderEnvForRoot(launch.env, identity.uid, `rank ${launch.rank} of job ${launch.jobId}`);
  const cwd = rankCwd(launch.cwd, identity);
  const env = rankEnv(launch, identity);
  resolveProgram(launch.argv[0]!, env.PATH, cwd, identity);
  const pin = pinnedArgv(detectPinningTool(pinning, launcher), launch.cpus, launch.memNodes, launch.argv);
  const memlock = await ensureMemlockUnlimited();
  const warnings = [...pin.warnings, ...(memlock.warning ? [memlock.warning] : [])];
  return { identity, cwd, env, pin, warnings };
}

/** The job's cwd, or the user's home when it has one, or "/". Entering it as the user is the supervisor's check. */
export function rankCwd(cwd: string | undefined, identity: RankIdentity): string {
  const dir = cwd ?? (isDirectory(identity.home) ? identity.home : '/');
  if (!isDirectory(dir)) throw rankError(RankErrorCode.BadCwd, `${dir}: not a directory`, { cwd: dir });
  return dir;
}

/** The environment the rank sees: the job's, plus identity variables and unbuffered Python. */
export function rankEnv(launch: RankLaunch, identity: RankIdentity): Record<string, string> {
  // the identity variables are those of the user the rank runs as, from this node's passwd,
  // whoever submitted and whatever the job said; also for the agent's own user, which the
  // agent's own environment (not inherited) would otherwise leave without them
  const env: Record<string, string> = { ...launch.env, HOME: identity.home, USER: identity.name, LOGNAME: identity.name, SHELL: identity.shell };
  // a rank's output goes to a file, where Python would otherwise buffer it in 8 KiB blocks
  // and lose the last ones on a kill
  env.PYTHONUNBUFFERED ??= '1';
  return env;
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
