// Who a rank runs as. The agent resolves the user through NSS (getent), so LDAP and
// sssd users work as they do for login, and hands plain numbers to the supervisor,
// which only does setgroups/setgid/setuid. Policy here, mechanism there.
import { execFile } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import { RankErrorCode, rankError } from './errors.js';
import { findTool } from './program.js';

const execFileAsync = promisify(execFile);

export interface RankIdentity {
  name: string;
  uid: number;
  gid: number;
  /** Supplementary groups, primary group included (as initgroups(3) would set them). */
  groups: number[];
  home: string;
  /** The login shell, from passwd ("/bin/sh" when the entry names none, as login(1) does). */
  shell: string;
  /** True when the supervisor must change uid/gid/groups (the agent is root and the user is someone else). */
  switchUser: boolean;
}

/** Whom ranks may run as. */
export interface RankUserPolicy {
  /** Ranks may run as root (a service agent refuses unless told, --allow-root). */
  allowRoot: boolean;
  /** An ephemeral agent runs ranks as its own user only: no switching, even when it is root. */
  ownUserOnly: boolean;
}

// One job has many ranks on a node; one lookup serves them all. Short enough that a
// user added to a group shows up in the next job.
const CACHE_MS = 30_000;

/** What login(1) and getpwent(3) callers assume for an empty shell field. */
const DEFAULT_SHELL = '/bin/sh';

export class IdentityResolver {
  private readonly cache = new Map<string, { at: number; identity: Promise<RankIdentity> }>();
  private readonly agentUid = process.getuid?.() ?? -1;

  constructor(private readonly policy: RankUserPolicy) {}

  /** Resolves `user` (or the agent's own user when undefined) and applies the root policy. */
  async resolve(user: string | undefined): Promise<RankIdentity> {
    const key = user ?? `#${this.agentUid}`;
    const hit = this.cache.get(key);
    let identity: RankIdentity;
    if (hit && Date.now() - hit.at < CACHE_MS) identity = await hit.identity;
    else {
      const pending = user === undefined ? Promise.resolve(this.self()) : this.lookup(user);
      this.cache.set(key, { at: Date.now(), identity: pending });
      pending.catch(() => this.cache.delete(key));
      identity = await pending;
    }
    if (identity.uid === 0 && !this.policy.allowRoot) {
      throw rankError(
        RankErrorCode.RootNotAllowed,
        user === undefined
          ? 'the job names no user and the agent runs as root, which this agent does not allow'
          : `user ${user} is root, which this agent does not allow`,
        { user: user ?? null },
      );
    }
    if (this.policy.ownUserOnly && identity.uid !== this.agentUid) {
      throw rankError(
        RankErrorCode.BadUser,
        `this agent is ephemeral: it runs ranks as its own user (uid ${this.agentUid}) only, not as ${identity.name} (uid ${identity.uid})`,
        { user },
      );
    }
    if (this.agentUid !== 0 && identity.uid !== this.agentUid) {
      throw rankError(
        RankErrorCode.BadUser,
        `the agent runs as uid ${this.agentUid} and cannot run ranks as ${identity.name} (uid ${identity.uid})`,
        { user },
      );
    }
    return identity;
  }

  /** The agent's own user, without a lookup: nothing will be switched. */
  private self(): RankIdentity {
    const me = os.userInfo();
    return {
      name: me.username,
      uid: me.uid,
      gid: me.gid,
      groups: [me.gid],
      home: me.homedir || '/',
      shell: me.shell || DEFAULT_SHELL,
      switchUser: false,
    };
  }

  private async lookup(user: string): Promise<RankIdentity> {
    const getent = findTool('getent');
    if (!getent) throw rankError(RankErrorCode.BadUser, 'getent is not installed: cannot resolve users');
    let passwd: string;
    try {
      passwd = (await execFileAsync(getent, ['passwd', user], { timeout: 10_000 })).stdout;
    } catch (err) {
      // getent exits 2 for "no such key"; anything else is an NSS failure, reported as such
      const code = (err as { code?: unknown }).code;
      const why = code === 2 ? 'no such user' : `user lookup failed (${(err as Error).message.split('\n')[0]})`;
      throw rankError(RankErrorCode.BadUser, `${user}: ${why}`, { user });
    }
    const fields = passwd.split('\n')[0]!.split(':');
    if (fields.length < 7) throw rankError(RankErrorCode.BadUser, `${user}: malformed passwd entry`, { user });
    const name = fields[0]!;
    const uid = Number(fields[2]);
    const gid = Number(fields[3]);
    if (!Number.isInteger(uid) || !Number.isInteger(gid))
      throw rankError(RankErrorCode.BadUser, `${user}: malformed passwd entry`, { user });
    let groups = [gid];
    try {
      // "name gid1 gid2 …": the same list initgroups(3) would install
      const out = (await execFileAsync(getent, ['initgroups', name], { timeout: 10_000 })).stdout;
      const ids = out.trim().split(/\s+/).slice(1).map(Number).filter(Number.isInteger);
      groups = [...new Set([gid, ...ids])];
    } catch {
      // a user with no supplementary groups makes some NSS modules answer "not found"
    }
    return {
      name,
      uid,
      gid,
      groups,
      home: fields[5] || '/',
      shell: fields[6] || DEFAULT_SHELL,
      switchUser: this.agentUid === 0 && uid !== 0 && !this.policy.ownUserOnly,
    };
  }
}
