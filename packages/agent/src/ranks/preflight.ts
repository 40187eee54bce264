// Everything decided before a rank's directory exists: who it runs as, where, with which
// environment, which program, pinned how (the supervisor's --cpus and --mems).
// Anything wrong here is a clear error from start() and leaves no trace on the node.
import fs from 'node:fs';
import { formatCpuList, loaderVariables } from '@rankd/protocol';
import { refuseLoaderEnvForRoot } from './caller-env.js';
import { RankErrorCode, rankError } from './errors.js';
import type { IdentityResolver, RankIdentity } from './identity.js';
import { ensureMemlockUnlimited } from './memlock.js';
import { resolveProgram } from './program.js';
import type { RankLaunch } from './rank-spec.js';

export interface PreparedRank {
  identity: RankIdentity;
  cwd: string;
  env: Record<string, string>;
  /** The names of `env` that came from what the rank inherits (RankEnv). */
  inheritedNames: Set<string>;
  pin: Pinning;
  warnings: string[];
}

/** How the supervisor pins the rank (sched_setaffinity and set_mempolicy in the rank's own process, native/prepare.c). */
export interface Pinning {
  /** --cpus/--mems for the supervisor; empty when nothing is planned. */
  options: string[];
  /** True when the memory policy will be set: NUMA nodes are planned. */
  memBound: boolean;
}

/** The supervisor's options for a plan; nothing planned, nothing asked. */
export function pinning(cpus: readonly number[], memNodes: readonly number[]): Pinning {
  const options = [
    ...(cpus.length > 0 ? ['--cpus', formatCpuList(cpus)] : []),
    ...(memNodes.length > 0 ? ['--mems', formatCpuList(memNodes)] : []),
  ];
  return { options, memBound: memNodes.length > 0 };
}

export async function prepareRank(launch: RankLaunch, identities: IdentityResolver): Promise<PreparedRank> {
  const identity = await identities.resolve(launch.user);
  // a root rank never drops privileges: nothing may act in its loader (caller-env.ts)
  refuseLoaderEnvForRoot(launch.env, identity.uid, `rank ${launch.rank} of job ${launch.jobId}`);
  const cwd = rankCwd(launch.cwd, identity);
  const { env, inheritedNames, warning: envWarning } = rankEnv(launch, identity);
  resolveProgram(launch.argv[0]!, env.PATH, cwd, identity);
  const pin = pinning(launch.cpus, launch.memNodes);
  const memlock = await ensureMemlockUnlimited();
  const warnings = [...(memlock.warning ? [memlock.warning] : []), ...(envWarning ? [envWarning] : [])];
  return { identity, cwd, env, inheritedNames, pin, warnings };
}

/** The job's cwd, or the user's home when it has one, or "/". Entering it as the user is the supervisor's check. */
export function rankCwd(cwd: string | undefined, identity: RankIdentity): string {
  const dir = cwd ?? (isDirectory(identity.home) ? identity.home : '/');
  if (!isDirectory(dir)) throw rankError(RankErrorCode.BadCwd, `${dir}: not a directory`, { cwd: dir });
  return dir;
}

export interface RankEnv {
  env: Record<string, string>;
  /** The names whose value came from `inherited` (nothing of the rank's own env or identity replaced it). */
  inheritedNames: Set<string>;
  /** Says which inherited loader variables a root rank was not given. */
  warning: string | null;
}

/**
 * The environment the rank sees, lowest first: what it inherits (the agent's PATH and
 * locale, the submitter's exported variables; for a root rank without their loader
 * variables), its own env (planner, PMI, --env), the identity variables of the user it
 * runs as, and unbuffered Python unless something set it.
 */
export function rankEnv(launch: RankLaunch, identity: RankIdentity): RankEnv {
  const inherited = { ...launch.inherited };
  let warning: string | null = null;
  if (identity.uid === 0) {
    // a root rank never drops privileges (caller-env.ts); the submitter's shell set these for
    // its own programs, not for root's, so they are left out rather than failing the job
    const dropped = loaderVariables(inherited);
    for (const name of dropped) delete inherited[name];
    if (dropped.length > 0) {
      warning = `the rank runs as root, so the exported ${dropped.join(', ')} ${dropped.length === 1 ? 'was' : 'were'} left out: loader variables never reach a root rank (run it as another user with --user; docs/ranks.md)`;
    }
  }
  // the identity variables are those of the user the rank runs as, from this node's passwd,
  // whoever submitted and whatever the job said
  const identityEnv = { HOME: identity.home, USER: identity.name, LOGNAME: identity.name, SHELL: identity.shell };
  const env: Record<string, string> = { ...inherited, ...launch.env, ...identityEnv };
  // a rank's output goes to a file, where Python would otherwise buffer it in 8 KiB blocks
  // and lose the last ones on a kill
  env.PYTHONUNBUFFERED ??= '1';
  const inheritedNames = new Set(Object.keys(inherited).filter((k) => !(k in launch.env) && !(k in identityEnv)));
  return { env, inheritedNames, warning };
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
