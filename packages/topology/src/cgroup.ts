// The CPUs and NUMA nodes this process may use: its cgroup's cpuset, v1 or v2, found
// through /proc/self/cgroup and /proc/mounts under the root (cgroup-mount.ts).
//
// - cgroup v2: <mount><path>/cpuset.cpus.effective and cpuset.mems.effective, which
//   already fold in every ancestor's limits;
// - cgroup v1: <mount><path>/cpuset.cpus and cpuset.mems;
// - the legacy cpuset filesystem: <mount><path>/cpus and mems.
// No cpuset at all means no restriction (null).
import { cgroupDir, cgroupPath, findMount } from './cgroup-mount.js';
import { FactsWarningCode, type Sysfs } from './sysfs.js';

export interface AllowedSets {
  /** Allowed CPUs, or null for no restriction found. */
  cpus: number[] | null;
  /** Allowed NUMA nodes, or null for no restriction found. */
  mems: number[] | null;
  /** The cgroup path and kind the sets came from, for the summary. */
  source: string | null;
}

export function readAllowed(sys: Sysfs): AllowedSets {
  const mount = findMount(sys, 'cpuset');
  if (!mount) return { cpus: null, mems: null, source: null };
  const path = cgroupPath(sys, mount.kind, 'cpuset');
  if (path === null) return { cpus: null, mems: null, source: null };
  const dir = cgroupDir(mount, path);
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
