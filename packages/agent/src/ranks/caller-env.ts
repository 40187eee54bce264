// The environment boundary of the agent, which is root on most nodes: a caller's variables
// (a job's `--env`, exec's `env`, a shell's TERM) are data handed to the supervisor, never
// the environment of a process that runs as root. The dynamic loader honours LD_PRELOAD,
// LD_AUDIT, GCONV_PATH and the like in any process that is not set-uid, so a root helper
// spawned with them (setpriv, su, the supervisor itself) would run a caller's code as root
// before any switch of user. As sudo's env_reset does, every helper starts from HELPER_ENV;
// the caller's variables reach only the program's exec, after the switch (supervisor.ts
// for stdin records, writeEnvFile for the exec mode).
//
// A target that is root itself (allowed only with --allow-root) never drops privileges,
// so there the loader's variables are refused outright: rootLoaderVariables.
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCode, RankdError } from '@rankd/protocol';

/** All a root helper of the agent is started with (plus the supervisor's own RANKD_* settings). */
export const HELPER_ENV: Readonly<Record<string, string>> = Object.freeze({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' });

/**
 * The variables glibc removes for set-uid programs (sysdeps/generic/unsecvars.h), which
 * change what a process loads, which files libc reads, or how it allocates, before the
 * program's own code runs. TMPDIR is in that list for set-uid programs that the caller
 * did not choose; a root target's program is the caller's own choice and reads TMPDIR
 * only if it wants to, so TMPDIR is allowed.
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
/** Whole families: every LD_ variable is the loader's, every MALLOC_ one the allocator's. */
const UNSECURE_PREFIXES = ['LD_', 'MALLOC_'];

/** Names in `env` that act in the loader or libc of a process before its program runs; sorted. */
export function loaderVariables(env: Record<string, string>): string[] {
  return Object.keys(env)
    .filter((k) => UNSECURE.has(k) || UNSECURE_PREFIXES.some((p) => k.startsWith(p)))
    .sort();
}

/**
 * Refuses loader variables for a target that runs as root (RANKD_ROOT_LOADER_ENV): nothing
 * drops privileges before such a program's loader reads them. `what` names the request.
 */
export function refuseLoaderEnvForRoot(env: Record<string, string>, uid: number, what: string): void {
  if (uid !== 0) return;
  const names = loaderVariables(env);
  if (names.length === 0) return;
  throw new RankdError(
    ErrorCode.RootLoaderEnv,
    `${what} runs as root and sets ${names.join(', ')}: loader and libc variables are refused for root targets (run it as another user, or leave them out)`,
    { variables: names },
  );
}

/**
 * Writes `env` as NAME=VALUE\0 records to `dir`/env, mode 0600, for a supervisor in exec
 * mode, which reads and deletes it before anything else. `dir` must be the agent's own
 * (0700, root's): the file is created exclusively, so nothing planted there is followed.
 */
export function writeEnvFile(dir: string, env: Record<string, string>): void {
  fs.writeFileSync(path.join(dir, 'env'), encodeEnv(env), { mode: 0o600, flag: 'wx' });
}

/** NAME=VALUE\0 records; validateLaunch has already refused '=' in names and NUL anywhere. */
export function encodeEnv(env: Record<string, string>): Buffer {
  return Buffer.from(Object.entries(env).map(([k, v]) => `${k}=${v}\0`).join(''), 'utf8');
}
