// The memory this process (and every rank it starts) may use: its memory cgroup's limits.
//
// A cgroup's limit holds for its whole subtree, so the effective limit is the smallest
// one of the process's cgroup and its ancestors up to the mount's root (a Slurm job's
// limit sits on job_N, its steps below; a pod's on the pod, its containers below):
// - cgroup v2: memory.max ("max" is none) and memory.high, where reclaim and throttling
//   start; the root cgroup has neither file;
// - cgroup v1: memory.limit_in_bytes, where "none" is a huge number (PAGE_COUNTER_MAX
//   pages, 2^63 rounded down to a page).
import { cgroupDir, cgroupPath, findMount } from './cgroup-mount.js';
import { FactsWarningCode, parseInteger, type Sysfs } from './sysfs.js';

export interface MemoryLimits {
  /** The smallest hard limit in kB, null for none; undefined when it could not be known. */
  limitKb: number | null | undefined;
  /** The smallest v2 memory.high in kB, null for none or on v1; undefined when unknown. */
  highKb: number | null | undefined;
  /** kind:path of the memory cgroup, null when there is no memory cgroup. */
  path: string | null;
}

/** At or above this a v1 limit means "no limit" (the kernel prints 9223372036854771712). */
const V1_UNLIMITED = 2 ** 62;

export function readMemoryLimits(sys: Sysfs): MemoryLimits {
  const mount = findMount(sys, 'memory');
  if (!mount) return { limitKb: null, highKb: null, path: null };
  const path = cgroupPath(sys, mount.kind, 'memory');
  if (path === null) return { limitKb: null, highKb: null, path: null };
  const source = `${mount.kind}:${path}`;
  const own = cgroupDir(mount, path);
  if (!sys.exists(own)) {
    // /proc/self/cgroup names a cgroup the mount does not show (a container's bind mount of a
    // host cgroup without a cgroup namespace): the limit is unknown, not absent
    sys.warn(FactsWarningCode.Inconsistent, `memory cgroup ${path} is not under its mount ${mount.dir}`, own);
    return { limitKb: undefined, highKb: undefined, path: source };
  }
  const v2 = mount.kind === 'cgroup2';
  let limitKb: number | null = null;
  let highKb: number | null = null;
  for (const dir of ancestry(path).map((p) => cgroupDir(mount, p))) {
    limitKb = smaller(limitKb, limitOf(sys, v2 ? `${dir}/memory.max` : `${dir}/memory.limit_in_bytes`));
    if (v2) highKb = smaller(highKb, limitOf(sys, `${dir}/memory.high`));
  }
  return { limitKb, highKb, path: source };
}

/** "/a/b/c" → ["/a/b/c", "/a/b", "/a", "/"]. */
function ancestry(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return parts.map((_, i) => '/' + parts.slice(0, parts.length - i).join('/')).concat('/');
}

function smaller(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

/** A limit file in kB, or null for none (absent file, "max", a v1 "unlimited" number). */
function limitOf(sys: Sysfs, file: string): number | null {
  const text = sys.text(file, { optional: true });
  if (text === null || text === 'max') return null;
  const bytes = parseInteger(text);
  if (bytes === null || bytes < 0) {
    sys.warn(FactsWarningCode.Garbled, `not a memory limit: "${text.slice(0, 64)}"`, file);
    return null;
  }
  return bytes >= V1_UNLIMITED ? null : Math.floor(bytes / 1024);
}
