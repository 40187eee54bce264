// Environment variables that act in a process's loader or libc before its program runs:
// what glibc removes for set-uid programs (sysdeps/generic/unsecvars.h), plus the LD_ and
// MALLOC_ families whole. A program that runs as root with them runs whatever they name
// as root; rankd refuses them for root targets (RANKD_ROOT_LOADER_ENV). The agent checks
// the uid it resolved; the controller, where a request names root.
import { ErrorCode, RankdError } from './errors.js';

/**
 * TMPDIR is in glibc's list for set-uid programs that the caller did not choose; a root
 * target's program is the caller's own choice and reads TMPDIR only if it wants to, so
 * rankd allows it.
 */
const UNSECURE = new Set([
  'GCONV_PATH',
  'GETCONF_DIR',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'LOCPATH',
  'NIS_PATH',
  'NLSPATH',
  'RESOLV_HOST_CONF',
  'RES_OPTIONS',
  'TZDIR',
]);
const UNSECURE_PREFIXES = ['LD_', 'MALLOC_'];

/** The names in `env` that act in the loader or libc; sorted. */
export function loaderVariables(env: Record<string, string> | undefined): string[] {
  return Object.keys(env ?? {})
    .filter((k) => UNSECURE.has(k) || UNSECURE_PREFIXES.some((p) => k.startsWith(p)))
    .sort();
}

/** Throws RANKD_ROOT_LOADER_ENV when `env` holds loader variables; call it for a target that runs as root. `what` names the request. */
export function refuseLoaderEnv(env: Record<string, string> | undefined, what: string): void {
  const names = loaderVariables(env);
  if (names.length === 0) return;
  throw new RankdError(
    ErrorCode.RootLoaderEnv,
    `${what} runs as root and sets ${names.join(', ')}: loader and libc variables are refused for root targets (run it as another user, or leave them out)`,
    { variables: names },
  );
}
