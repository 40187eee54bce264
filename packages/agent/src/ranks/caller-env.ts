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
// so there the loader's variables are refused outright: refuseLoaderEnvForRoot.
import fs from 'node:fs';
import path from 'node:path';
import { refuseLoaderEnv } from '@rankd/protocol';

/** All a root helper of the agent is started with (plus the supervisor's own RANKD_* settings). */
export const HELPER_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
  LANG: 'C',
});

/** Refuses glibc's loader and libc variables (protocol's loader-env.ts) for a target that runs as root: RANKD_ROOT_LOADER_ENV. */
export function refuseLoaderEnvForRoot(env: Record<string, string>, uid: number, what: string): void {
  if (uid === 0) refuseLoaderEnv(env, what);
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
  return Buffer.from(
    Object.entries(env)
      .map(([k, v]) => `${k}=${v}\0`)
      .join(''),
    'utf8',
  );
}
