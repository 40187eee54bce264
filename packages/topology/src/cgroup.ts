// The CPUs and NUMA nodes this process may use: its cgroup's cpuset, v1 or v2, found
// through /proc/self/cgroup and /proc/mounts under the root (hwloc's method).
//
// - cgroup v2: <mount><path>/cpuset.cpus.effective and cpuset.mems.effective, which
//   already fold in every ancestor's limits;
// - cgroup v1: <mount><path>/cpuset.cpus and cpuset.mems;
// - the legacy cpuset filesystem: <mount><path>/cpus and mems.
// Standard mount points are tried before /proc/mounts, as hwloc does. No cpuset at all
// means no restriction (null).
import { FactsWarningCode, type Sysfs } from './sysfs.js';

type CgroupKind = 'cgroup2' | 'cgroup1' | 'cpuset';

export interface AllowedSets {
  /** Allowed CPUs, or null for no restriction found. */
  cpus: number[] | null;
  /** Allowed NUMA nodes, or null for no restriction found. */
  mems: number[] | null;
  /** The cgroup path and kind the sets came from, for the summary. */
  source: string | null;
}

export function readAllowed(sys: Sysfs): AllowedSets {
  const mount = findCpusetMount(sys);
  if (!mount) return { cpus: null, mems: null, source: null };
  const path = cgroupPath(sys, mount.kind);
  if (path === null) return { cpus: null, mems: null, source: null };
  const dir = `${mount.dir}${path === '/' ? '' : path}`;
  const file = (attr: 'cpus' | 'mems') =>
    mount.kind === 'cgroup2'
      ? `${dir}/cpuset.${attr}.effective`
      : mount.kind === 'cgroup1'
        ? `${dir}/cpuset.${attr}`
        : `${dir}/${attr}`;
  let cpus = sys.list(file('cpus'), { optional: true });
  let mems = sys.list(file('mems'), { optional: true });
  // an empty cpuset.cpus (v1 child never configured) would mean "nothing": treat as unknown
  if (cpus !== null && cpus.length === 0) cpus = null;
  if (mems !== null && mems.length === 0) mems = null;
  if (cpus === null)
    sys.warn(FactsWarningCode.Missing, 'cgroup cpuset not readable; all CPUs taken as allowed', file('cpus'));
  return { cpus, mems, source: `${mount.kind}:${path}` };
}

function findCpusetMount(sys: Sysfs): { kind: CgroupKind; dir: string } | null {
  if (sys.exists('/sys/fs/cgroup/cpuset.cpus.effective')) return { kind: 'cgroup2', dir: '/sys/fs/cgroup' };
  if (sys.exists('/sys/fs/cgroup/cpuset/cpuset.cpus')) return { kind: 'cgroup1', dir: '/sys/fs/cgroup/cpuset' };
  if (sys.exists('/dev/cpuset/cpus')) return { kind: 'cpuset', dir: '/dev/cpuset' };
  const mounts = sys.text('/proc/mounts', { optional: true });
  for (const line of (mounts ?? '').split('\n')) {
    const [, dir, type, opts] = line.split(/\s+/);
    if (!dir || !type) continue;
    const where = unescapeMount(dir);
    if (type === 'cgroup2') {
      const controllers = sys.text(`${where}/cgroup.controllers`, { optional: true });
      if (controllers?.split(/\s+/).includes('cpuset')) return { kind: 'cgroup2', dir: where };
    } else if (type === 'cpuset') {
      return { kind: 'cpuset', dir: where };
    } else if (type === 'cgroup') {
      const options = (opts ?? '').split(',');
      if (!options.includes('cpuset')) continue;
      return { kind: options.includes('noprefix') ? 'cpuset' : 'cgroup1', dir: where };
    }
  }
  return null;
}

/** The process's cgroup in the hierarchy that carries cpusets. */
function cgroupPath(sys: Sysfs, kind: CgroupKind): string | null {
  const cpuset = sys.text('/proc/self/cpuset', { optional: true });
  if (cpuset) return cpuset.split('\n')[0]!;
  const text = sys.text('/proc/self/cgroup', { optional: true });
  if (text === null) return null;
  let v1: string | null = null;
  let v2: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '') v2 ??= m[2]!;
    else if (m[1]!.split(',').includes('cpuset')) v1 ??= m[2]!;
  }
  // hybrid hosts list both; take the line of the hierarchy the mount belongs to
  return kind === 'cgroup2' ? (v2 ?? v1) : (v1 ?? v2);
}

/** /proc/mounts escapes spaces and tabs as octal. */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}
