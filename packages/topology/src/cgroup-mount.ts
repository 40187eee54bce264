// Where a cgroup controller's hierarchy is mounted and which of its cgroups this process
// is in, found through /proc/self/cgroup and /proc/mounts under the root (hwloc's method).
// Standard mount points are tried before /proc/mounts, as hwloc does.
import type { Sysfs } from './sysfs.js';

/** cgroup v2, a v1 hierarchy, or the legacy cpuset filesystem (v1 with noprefix). */
export type CgroupKind = 'cgroup2' | 'cgroup1' | 'cpuset';

export type Controller = 'cpuset' | 'memory' | 'devices';

export interface CgroupMount {
  kind: CgroupKind;
  /** The mount point inside the root. */
  dir: string;
}

/** A file that only a hierarchy carrying the controller has at its root. */
const V1_PROBE: Record<Controller, string> = {
  cpuset: 'cpuset.cpus',
  memory: 'memory.limit_in_bytes',
  devices: 'devices.list',
};

export function findMount(sys: Sysfs, controller: Controller): CgroupMount | null {
  if (v2Carries(sys, '/sys/fs/cgroup', controller)) return { kind: 'cgroup2', dir: '/sys/fs/cgroup' };
  const v1 = `/sys/fs/cgroup/${controller}`;
  if (sys.exists(`${v1}/${V1_PROBE[controller]}`)) return { kind: 'cgroup1', dir: v1 };
  if (controller === 'cpuset' && sys.exists('/dev/cpuset/cpus')) return { kind: 'cpuset', dir: '/dev/cpuset' };
  const mounts = sys.text('/proc/mounts', { optional: true });
  for (const line of (mounts ?? '').split('\n')) {
    const [, dir, type, opts] = line.split(/\s+/);
    if (!dir || !type) continue;
    const where = unescapeMount(dir);
    if (type === 'cgroup2') {
      const controllers = sys.text(`${where}/cgroup.controllers`, { optional: true });
      if (controllers?.split(/\s+/).includes(controller)) return { kind: 'cgroup2', dir: where };
    } else if (type === 'cpuset' && controller === 'cpuset') {
      return { kind: 'cpuset', dir: where };
    } else if (type === 'cgroup') {
      const options = (opts ?? '').split(',');
      if (!options.includes(controller)) continue;
      return { kind: controller === 'cpuset' && options.includes('noprefix') ? 'cpuset' : 'cgroup1', dir: where };
    }
  }
  return null;
}

/**
 * The cgroup v2 root: its cpuset.cpus.effective (the root cgroup has the effective files
 * only), or its cgroup.controllers naming the controller.
 */
function v2Carries(sys: Sysfs, dir: string, controller: Controller): boolean {
  if (controller === 'cpuset' && sys.exists(`${dir}/cpuset.cpus.effective`)) return true;
  if (controller === 'cpuset') return false;
  const controllers = sys.text(`${dir}/cgroup.controllers`, { optional: true });
  return controllers?.split(/\s+/).includes(controller) ?? false;
}

/** The process's cgroup in the hierarchy that carries `controller`, or null when none is listed. */
export function cgroupPath(sys: Sysfs, kind: CgroupKind, controller: Controller): string | null {
  if (controller === 'cpuset') {
    const cpuset = sys.text('/proc/self/cpuset', { optional: true });
    if (cpuset) return cpuset.split('\n')[0]!;
  }
  const text = sys.text('/proc/self/cgroup', { optional: true });
  if (text === null) return null;
  let v1: string | null = null;
  let v2: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '') v2 ??= m[2]!;
    else if (m[1]!.split(',').includes(controller)) v1 ??= m[2]!;
  }
  // hybrid hosts list both; take the line of the hierarchy the mount belongs to
  return kind === 'cgroup2' ? (v2 ?? v1) : (v1 ?? v2);
}

/** The directory of cgroup `path` under the mount. */
export function cgroupDir(mount: CgroupMount, path: string): string {
  return `${mount.dir}${path === '/' ? '' : path}`;
}

/** /proc/mounts escapes spaces and tabs as octal. */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}
