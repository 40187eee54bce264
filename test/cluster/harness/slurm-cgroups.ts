// The cgroups (v1) that Slurm's task/cgroup and proctrack/cgroup use in the namespace hosts.
//
// Two facts shape this file:
//
// 1. `ip netns exec` gives each host a mount namespace with a fresh sysfs on /sys, so a
//    process in a host finds nothing under /sys/fs/cgroup. slurmd needs the hierarchies, and
//    so does whatever reads its cgroup inside a step (rankd's facts reader goes through
//    /proc/self/cgroup and /sys/fs/cgroup/<subsystem>). Each slurmd therefore starts through
//    a wrapper that mounts the machine's v1 hierarchies again at /sys/fs/cgroup in its own
//    mount namespace. Mounting an existing v1 hierarchy again with its subsystems gives the
//    same hierarchy, whole, so the paths /proc/PID/cgroup shows are valid there, as on a
//    real node. The mounts live and die with that namespace (slurmd, its slurmstepds and
//    their tasks); the root namespace never sees them.
//
// 2. Slurm builds its tree at the root of each hierarchy it is given
//    (`CgroupMountpoint/<subsystem>/<prefix>/uid_<uid>/job_<id>/step_<step>`). Debian's
//    22.05 is built with --enable-multiple-slurmd (`scontrol show config` prints
//    MULTIPLE_SLURMD = Yes), which makes the prefix `/slurm_<NodeName>` instead of `/slurm`
//    (src/common/cgroup.c, cgroup_prepend; src/plugins/cgroup/v1/xcgroup.c,
//    xcgroup_create_slurm_cg), so three slurmd of one run do not share a job's cgroup. Two
//    runs at once (tap runs test files in parallel) would: both have a host1 and a job 1.
//    So each slurmd gets a root of its own: `CgroupMountpoint=<runDir>/cgroup`, and each
//    host's wrapper binds there, per hierarchy, the cgroup `<own>/rankd-slurm-<subnet>-<pid>/<host>`,
//    where <own> is this test process's cgroup in that hierarchy. That also holds on a build
//    without multiple-slurmd, and keeps every slurmstepd and task inside the cgroups the
//    test's runner put the test in.
//
// One cost, unused here: Slurm's "is this pid in the step" check (proctrack_g_has_pid, for
// pam_slurm_adopt and nss_slurm) joins the mount point with the path /proc/PID/cgroup shows,
// which is relative to the hierarchy's root, not to Slurm's; it answers "no" in this rig.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../helpers/cluster.js';

const CGROUP_ROOT = '/sys/fs/cgroup';
/** Mount options that say how, not which subsystems. */
const MOUNT_FLAGS = new Set([
  'rw',
  'ro',
  'relatime',
  'noatime',
  'nosuid',
  'nodev',
  'noexec',
  'xattr',
  'clone_children',
]);
const CLIENTS = 'clients';
const RUN_CGROUP_RE = /^rankd-slurm-\d+-(\d+)$/;

/** A mounted cgroup v1 hierarchy, as this test process sees it. */
export interface Hierarchy {
  /** Its directory under /sys/fs/cgroup ("cpuset", "memory", "name=systemd"'s "systemd"). */
  dir: string;
  /** The options that select it again at a mount ("cpuset", "cpu,cpuacct", "none,name=systemd"). */
  options: string;
  /** This process's cgroup in it ("/" or e.g. "/process_api/5bb7…"). */
  own: string;
}

/** The v1 hierarchies mounted under /sys/fs/cgroup, each with this process's cgroup in it. */
export function cgroupV1Hierarchies(): Hierarchy[] {
  // (named hierarchies such as name=systemd included: a host sees what the machine has)
  const own = ownCgroups();
  const out: Hierarchy[] = [];
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, where, type, opts] = line.split(' ');
    if (type !== 'cgroup' || !where?.startsWith(`${CGROUP_ROOT}/`)) continue;
    const selecting = (opts ?? '').split(',').filter((o) => !MOUNT_FLAGS.has(o));
    const key = selecting
      .filter((o) => o !== 'none')
      .sort()
      .join(',');
    const path = own.get(key);
    if (path === undefined) continue;
    out.push({ dir: where.slice(CGROUP_ROOT.length + 1), options: selecting.join(','), own: path });
  }
  return out;
}

/** Subsystems (sorted, comma-joined) → this process's cgroup path, from /proc/self/cgroup. */
function ownCgroups(): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const m = /^\d+:([^:]+):(.*)$/.exec(line);
    if (m) map.set(m[1]!.split(',').sort().join(','), m[2]!);
  }
  return map;
}

/**
 * The hierarchies Slurm's cgroup/v1 uses: cpuset and memory (task/cgroup's ConstrainCores,
 * ConstrainRAMSpace), freezer (proctrack/cgroup), devices (ConstrainDevices), cpuacct
 * (jobacct_gather/cgroup). The run's cgroups are made in these only.
 */
export const SLURM_SUBSYSTEMS = ['cpuset', 'memory', 'freezer', 'devices', 'cpuacct'];

/** What Slurm needs from the machine's cgroups, or why it cannot have it. */
export function slurmCgroupsUnsupported(): string | null {
  let hierarchies: Hierarchy[];
  try {
    hierarchies = cgroupV1Hierarchies();
  } catch (err) {
    return `cannot read this process's cgroups: ${(err as Error).message}`;
  }
  // task/cgroup with ConstrainCores and ConstrainRAMSpace, and proctrack/cgroup
  const missing = ['cpuset', 'memory', 'freezer'].filter((s) => !hierarchies.some((h) => h.dir === s));
  if (missing.length > 0)
    return `Slurm's cgroup/v1 needs the ${missing.join(', ')} hierarchies mounted under ${CGROUP_ROOT} (cgroup v1)`;
  return null;
}

/** This run's cgroups: one per host in each hierarchy, under one per run. */
export class RunCgroups {
  readonly name: string;

  constructor(
    readonly hierarchies: Hierarchy[],
    subnet: number,
    readonly hosts: readonly string[],
  ) {
    this.name = `rankd-slurm-${subnet}-${process.pid}`;
  }

  /** `<own>/<run>` in a hierarchy, as a cgroup path (what /proc/PID/cgroup shows). */
  runPath(h: Hierarchy): string {
    return `${h.own === '/' ? '' : h.own}/${this.name}`;
  }

  /** A host's root for Slurm in a hierarchy, as a cgroup path. */
  hostPath(h: Hierarchy, host: string): string {
    return `${this.runPath(h)}/${host}`;
  }

  hierarchy(dir: string): Hierarchy {
    const h = this.hierarchies.find((x) => x.dir === dir);
    if (!h) throw new Error(`no cgroup v1 hierarchy ${dir} is mounted`);
    return h;
  }

  /**
   * Creates the run's and each host's cgroup. A v1 cpuset starts with no CPUs and no memory
   * nodes, and Slurm copies its parent's: each level gets its parent's, or `cpus` for hosts.
   */
  create(cpus?: string): void {
    for (const h of this.hierarchies) {
      const run = fsPath(h, this.runPath(h));
      mkdirSync(run, { recursive: true });
      if (h.dir === 'cpuset') inheritCpuset(run);
      for (const host of this.hosts) {
        const dir = join(run, host);
        mkdirSync(dir, { recursive: true });
        if (h.dir === 'cpuset') inheritCpuset(dir, cpus);
      }
      if (h.dir === 'freezer') mkdirSync(join(run, CLIENTS));
    }
  }

  /**
   * The cgroup.procs file of the run's clients (salloc, sbatch, srun on the login node, and
   * what salloc runs): in the freezer hierarchy, which needs no setup, so that a run killed
   * outright can still be told from them.
   */
  get clientsProcs(): string {
    const h = this.hierarchy('freezer');
    return join(fsPath(h, this.runPath(h)), CLIENTS, 'cgroup.procs');
  }

  /** A host's cpuset.cpus, as Slurm inherits it. */
  hostCpus(host: string): string {
    const h = this.hierarchy('cpuset');
    return readFileSync(join(fsPath(h, this.hostPath(h, host)), 'cpuset.cpus'), 'utf8').trim();
  }

  /** Every cgroup directory of a job (`job_<id>`) in the run's tree, in any hierarchy. */
  jobDirs(jobId: string): string[] {
    return this.dirs().filter((d) => d.endsWith(`/job_${jobId}`));
  }

  /** Pids in the hosts' cgroups: what Slurm started and still runs (slurmstepd, tasks). */
  pids(): number[] {
    return pidsIn(this.dirs().filter((d) => !d.endsWith(`/${CLIENTS}`)));
  }

  /** Pids in any cgroup of the run. */
  allPids(): number[] {
    return pidsIn(this.dirs());
  }

  /** Pids of the run's clients and their children. */
  clientPids(): number[] {
    return pidsIn([join(this.clientsProcs, '..')]);
  }

  /** Every directory of the run's tree, parents first. */
  dirs(): string[] {
    const out: string[] = [];
    for (const h of this.hierarchies) walk(fsPath(h, this.runPath(h)), out);
    return out;
  }

  /** Removes the run's tree, deepest first; returns the directories that remain (still holding tasks). */
  remove(): string[] {
    for (const dir of this.dirs().reverse()) rmdirQuiet(dir);
    return this.dirs();
  }
}

/**
 * Ends what a run whose process is gone (killed outright, so no teardown ran) left in its
 * cgroups, and removes them. Its slurmd and slurmctld died with it (PDEATHSIG), but the
 * slurmstepd and tasks they started are nobody's children: only these cgroups, which this
 * rig alone creates (named by run and owner pid), still say whose they are.
 */
export function sweepStaleCgroups(hierarchies: Hierarchy[]): void {
  const stale: string[] = [];
  for (const h of hierarchies) {
    const own = fsPath(h, h.own);
    let entries: string[];
    try {
      entries = readdirSync(own);
    } catch {
      continue;
    }
    for (const e of entries) {
      const m = RUN_CGROUP_RE.exec(e);
      if (!m || processAlive(Number(m[1]))) continue;
      walk(join(own, e), stale);
    }
  }
  if (stale.length === 0) return;
  for (const pid of pidsIn(stale)) killQuiet(pid);
  const deadline = Date.now() + 2000;
  while (pidsIn(stale).length > 0 && Date.now() < deadline) sleepSync(50);
  for (const dir of stale.reverse()) rmdirQuiet(dir);
}

/**
 * The argv that runs `argv` with every hierarchy of `all` mounted at /sys/fs/cgroup, as on
 * a node, and the cgroup `binds` names in some of them bound at `<view>/<dir>`. Run it
 * inside `ip netns exec`, whose mount namespace is already private to the process. Paths and
 * options are arguments of a fixed script, never pasted into it; `exec` keeps the pid the
 * program's own.
 */
export function withCgroupView(
  view: string,
  all: Hierarchy[],
  binds: ReadonlyMap<Hierarchy, string>,
  argv: string[],
): string[] {
  const script = [
    'set -e',
    'view=$1; n=$2; shift 2',
    'mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup',
    'while [ "$n" -gt 0 ]; do',
    '  mkdir "/sys/fs/cgroup/$1"',
    '  mount -t cgroup -o "$2" cgroup "/sys/fs/cgroup/$1"',
    '  if [ "$3" != - ]; then mount --bind "/sys/fs/cgroup/$1$3" "$view/$1"; fi',
    '  shift 3; n=$((n - 1))',
    'done',
    'shift',
    'exec "$@"',
  ].join('\n');
  for (const h of binds.keys()) mkdirSync(join(view, h.dir), { recursive: true });
  const triples = all.flatMap((h) => [h.dir, h.options, binds.get(h) ?? '-']);
  return ['/bin/sh', '-c', script, 'slurmd-cgroups', view, String(all.length), ...triples, '--', ...argv];
}

/** "0-2,5" → [0, 1, 2, 5]. */
export function parseCpuList(text: string): number[] {
  const out: number[] = [];
  for (const part of text.trim().split(',')) {
    if (!part) continue;
    const [a, b] = part.split('-').map(Number);
    for (let c = a!; c <= (b ?? a!); c++) out.push(c);
  }
  return out;
}

function pidsIn(dirs: string[]): number[] {
  const pids = new Set<number>();
  for (const dir of dirs) {
    try {
      for (const l of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (l) pids.add(Number(l));
    } catch {
      // removed meanwhile
    }
  }
  return [...pids];
}

/** Synchronous: the sweep and the last-resort teardown run where nothing can be awaited. */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function killQuiet(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function fsPath(h: Hierarchy, cgroupPath: string): string {
  return `${CGROUP_ROOT}/${h.dir}${cgroupPath === '/' ? '' : cgroupPath}`;
}

function inheritCpuset(dir: string, cpus?: string): void {
  const parent = join(dir, '..');
  for (const file of ['cpuset.cpus', 'cpuset.mems']) {
    const value = file === 'cpuset.cpus' && cpus ? cpus : readFileSync(join(parent, file), 'utf8').trim();
    writeFileSync(join(dir, file), value);
  }
}

function walk(dir: string, out: string[]): void {
  if (!existsSync(dir)) return;
  out.push(dir);
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) walk(join(dir, e.name), out);
}

function rmdirQuiet(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // still holds a task, or already gone
  }
}
