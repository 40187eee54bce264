// Per-rank cgroups, where the agent has a cgroup v2 subtree it may write (systemd
// Delegate=yes, a container that owns its hierarchy, or an explicit directory). A process
// group can be left with setsid(); a cgroup cannot be left without privileges, and
// cgroup.kill (Linux 5.14) kills everything in it at once, children of children included.
// Where there is no such subtree, ranks are tracked by process group alone.
//
// Each rank gets <base>/rankd-<jobId>.<rank>; a process of a job that is not a rank (Open
// MPI's mpirun and orted) gets <base>/rankd-<jobId>.<name> beside them. No controller is
// enabled in the agent's subtree_control, so the "no internal processes" rule does not
// apply and the agent may stay in its own cgroup beside its ranks' children.
import fs from 'node:fs';
import path from 'node:path';

export type CgroupMode = 'auto' | 'off' | { base: string };

/** Mount point of the cgroup v2 hierarchy and the cgroup of this process in it, or null. */
export function ownCgroupDir(): string | null {
  let self: string;
  let mountinfo: string;
  try {
    self = fs.readFileSync('/proc/self/cgroup', 'utf8');
    mountinfo = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  const rel = self
    .split('\n')
    .find((l) => l.startsWith('0::'))
    ?.slice(3);
  if (rel === undefined) return null;
  for (const line of mountinfo.split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post || post.split(' ')[0] !== 'cgroup2') continue;
    const fields = pre.split(' ');
    const mountRoot = fields[3];
    const mountPoint = fields[4];
    if (!mountRoot || !mountPoint) continue;
    // with a cgroup namespace, /proc/self/cgroup is relative to the mount's root
    const inside = path.posix.relative(mountRoot, rel);
    if (inside.startsWith('..')) continue;
    return path.join(unescapeMount(mountPoint), inside);
  }
  return null;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/**
 * The directory under which rank cgroups are created, or null for process groups only.
 * 'auto' probes the agent's own cgroup: a child must be creatable and must offer cgroup.kill.
 */
export function detectCgroupBase(mode: CgroupMode): string | null {
  if (mode === 'off') return null;
  const base = mode === 'auto' ? ownCgroupDir() : mode.base;
  if (!base) return null;
  const probe = path.join(base, `rankd-probe-${process.pid}`);
  try {
    fs.mkdirSync(probe);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return null;
  }
  try {
    return fs.existsSync(path.join(probe, 'cgroup.kill')) && fs.existsSync(path.join(probe, 'cgroup.procs'))
      ? base
      : null;
  } finally {
    try {
      fs.rmdirSync(probe);
    } catch {
      // a probe left behind is empty and harmless
    }
  }
}

export function rankCgroupPath(base: string, jobId: string, rank: number | string): string {
  return path.join(base, `rankd-${jobId}.${rank}`);
}

/** Creates the rank's cgroup (or a named one of the job's); an empty one left by an earlier attempt is reused. */
export function createRankCgroup(base: string, jobId: string, rank: number | string): string {
  const dir = rankCgroupPath(base, jobId, rank);
  try {
    fs.mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return dir;
}

/** Kills every process in the cgroup (SIGKILL, by the kernel). False when the cgroup is gone. */
export function killCgroup(dir: string): boolean {
  try {
    fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
    return true;
  } catch {
    return false;
  }
}

/** True while any process is in the cgroup or below it. A missing cgroup is empty. */
export function cgroupPopulated(dir: string): boolean {
  try {
    return /^populated 1$/m.test(fs.readFileSync(path.join(dir, 'cgroup.events'), 'utf8'));
  } catch {
    return false;
  }
}

export function cgroupPids(dir: string): number[] {
  try {
    return fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Removes an empty rank cgroup; one still populated (or already gone) is left as it is. */
export function removeCgroup(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch {
    // EBUSY: still populated (the supervisor or abort path will come back); ENOENT: done
  }
}
