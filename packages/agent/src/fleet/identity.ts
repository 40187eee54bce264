// Who a fleet command or shell runs as, with the same policy as ranks (root only where
// the agent allows it; another user only when the agent is root). The switch itself is
// the rank supervisor's (switched-command.ts): groups, gids, then uids, proven from
// /proc/self/status, with the caller's environment installed only after it.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { promisify } from 'node:util';
import { FleetErrorCode, RankdError } from '@rankd/protocol';
import type { IdentityResolver, RankIdentity } from '../ranks/identity.js';
import { findTool } from '../ranks/program.js';

const execFileAsync = promisify(execFile);

export interface FleetIdentity extends RankIdentity {
  shell: string;
}

export async function resolveIdentity(identities: IdentityResolver, user: string | undefined): Promise<FleetIdentity> {
  let id: RankIdentity;
  try {
    id = await identities.resolve(user);
  } catch (err) {
    // the ranks' wording speaks of jobs; say what to do here instead
    const message =
      (err as { code?: string }).code === 'RANKD_RANK_ROOT_NOT_ALLOWED'
        ? `${user === undefined ? 'the agent runs as root' : `user ${user} is root`}, which this agent does not allow (run its commands with --user, or start the agent with --allow-root)`
        : (err as Error).message;
    throw new RankdError(FleetErrorCode.ExecUser, message, { user: user ?? null });
  }
  const shell = user === undefined ? os.userInfo().shell || '/bin/sh' : await loginShell(user);
  return { ...id, shell };
}

async function loginShell(user: string): Promise<string> {
  const getent = findTool('getent');
  if (!getent) return '/bin/sh';
  try {
    const { stdout } = await execFileAsync(getent, ['passwd', user], { timeout: 10_000 });
    return stdout.split('\n')[0]?.split(':')[6]?.trim() || '/bin/sh';
  } catch {
    return '/bin/sh';
  }
}

/** The environment a fleet command's program gets (never its supervisor): a login-like minimum, then the caller's. */
export function baseEnv(id: FleetIdentity, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: id.home,
    USER: id.name,
    LOGNAME: id.name,
    SHELL: id.shell,
  };
  for (const key of ['LANG', 'LC_ALL', 'TZ']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return { ...env, ...extra };
}

/** The user's home as the default cwd; as login(1) does, "/" when it does not exist (nobody's /nonexistent). */
export function defaultCwd(id: FleetIdentity): string {
  try {
    return fs.statSync(id.home).isDirectory() ? id.home : '/';
  } catch {
    return '/';
  }
}
