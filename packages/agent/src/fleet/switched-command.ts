// How a fleet command or shell is started: behind the rank supervisor in exec mode, which
// switches to the user (when the agent is root and the user is someone else), enters the
// cwd and only then installs the program's environment and execs it. The supervisor itself
// runs with the agent's fixed environment, so nothing a caller sent (LD_PRELOAD, GCONV_PATH,
// …) acts in a process that is still root (ranks/caller-env.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HELPER_ENV, writeEnvFile } from '../ranks/caller-env.js';
import type { SupervisorBinary } from '../ranks/supervisor-binary.js';
import { supervisorArgv, userSpecOf } from '../ranks/supervisor.js';
import type { FleetIdentity } from './identity.js';

export interface SwitchedCommand {
  /** The supervisor's argv: spawn argv[0] with the rest. */
  argv: string[];
  /** The supervisor's own, fixed environment. */
  env: Record<string, string>;
  /** Removes the private directory of the environment file; call once the command has ended or failed to start. */
  cleanup(): void;
}

/** Prepares `argv` to run as `id` in `cwd` with `env`, which waits in a 0600 file of a fresh 0700 directory. */
export function switchedCommand(
  supervisor: SupervisorBinary,
  id: FleetIdentity,
  cwd: string,
  argv: string[],
  env: Record<string, string>,
): SwitchedCommand {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-fleet-'));
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    writeEnvFile(dir, env);
  } catch (err) {
    cleanup();
    throw err;
  }
  return {
    argv: supervisorArgv({
      supervisor,
      mode: 'exec',
      options: [],
      rankDir: dir,
      cgroup: null,
      userSpec: userSpecOf(id),
      cwd,
      argv,
    }),
    env: { ...HELPER_ENV },
    cleanup,
  };
}
