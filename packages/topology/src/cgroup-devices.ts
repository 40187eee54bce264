// The device files this process may open, where the kernel says: a cgroup v1 devices
// controller's devices.list. Slurm (ConstrainDevices=yes) and container runtimes list a
// job's GPUs there, and CUDA then counts only the GPUs it can open, so that
// CUDA_VISIBLE_DEVICES indexes count those. cgroup v2 enforces devices with an eBPF
// program that cannot be read back: there, and without a devices hierarchy, nothing is
// known to be closed (null).
import { cgroupDir, cgroupPath, findMount } from './cgroup-mount.js';
import { FactsWarningCode, type Sysfs } from './sysfs.js';

export interface DeviceAccess {
  /** kind:path of the devices cgroup, for the facts. */
  source: string;
  /** Whether a character device may be opened for reading and writing. */
  allowsChar(major: number, minor: number): boolean;
}

interface Rule {
  type: 'a' | 'b' | 'c';
  major: number | '*';
  minor: number | '*';
  access: string;
}

/** The devices cgroup's rules, or null when they allow everything or cannot be read. */
export function readDeviceAccess(sys: Sysfs): DeviceAccess | null {
  const mount = findMount(sys, 'devices');
  if (!mount || mount.kind !== 'cgroup1') return null;
  const path = cgroupPath(sys, mount.kind, 'devices');
  if (path === null) return null;
  const file = `${cgroupDir(mount, path)}/devices.list`;
  const text = sys.text(file, { optional: true });
  if (text === null) return null;
  const rules: Rule[] = [];
  for (const line of text.split('\n').filter((l) => l.trim() !== '')) {
    const m = /^([abc]) (\d+|\*):(\d+|\*) ([rwm]+)$/.exec(line.trim());
    if (!m) {
      sys.warn(FactsWarningCode.Garbled, `not a devices rule: "${line.slice(0, 64)}"`, file);
      return null;
    }
    const num = (v: string) => (v === '*' ? '*' : Number(v));
    rules.push({ type: m[1] as Rule['type'], major: num(m[2]!), minor: num(m[3]!), access: m[4]! });
  }
  if (rules.some((r) => r.type === 'a' && r.access.includes('r') && r.access.includes('w'))) return null;
  return {
    source: `cgroup1:${path}`,
    allowsChar: (major, minor) =>
      rules.some(
        (r) =>
          (r.type === 'a' || r.type === 'c') &&
          (r.major === '*' || r.major === major) &&
          (r.minor === '*' || r.minor === minor) &&
          r.access.includes('r') &&
          r.access.includes('w'),
      ),
  };
}
