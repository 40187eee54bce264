// A real Slurm across namespace hosts (lib/netns.ts), for the `slurm` figure: slurmctld in
// the controller's namespace, which is also the login node where salloc and the clients
// run, and one `slurmd -D -N hostN` in each host's (NodeAddr = the host's 10.77.<n>.<k>),
// every daemon started here and stopped by its pid, every file in the figure's directory.
//
// The minimum of test/cluster/harness/slurm.ts, which the bench cannot import (it is built
// from bench/ alone): the same configuration (auth/none and cred/none: every daemon and
// client is root on this one machine, in namespaces nothing outside can reach), but
// proctrack/linuxproc and task/affinity instead of Slurm's cgroups. Confining steps takes
// the harness's per-slurmd cgroup trees (slurm-cgroups.ts, a Slurm root per host);
// the figure times starting rankd and a job, which does not depend on how Slurm tracks
// the processes, and the bench stays as self-contained as peers/slurm.ts.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { waitFor, type Daemon } from '../lib/child.js';
import type { HostNetwork, Namespace } from '../lib/netns.js';
import { which } from '../lib/which.js';
import { BENCH_SLURM_SETTINGS } from '../peers/slurm.js';

export const SLURM_PROGRAMS = ['slurmctld', 'slurmd', 'slurmstepd', 'salloc', 'srun', 'sinfo', 'scancel', 'scontrol'];
/** Every namespace has its own ports: the defaults serve. */
const SLURMCTLD_PORT = 6817;
const SLURMD_PORT = 6818;
const READY_TIMEOUT_MS = 30_000;
const CLIENT_TIMEOUT_MS = 30_000;
/** What salloc waits for nodes before it gives up. */
const IMMEDIATE_S = 10;

export interface SlurmHosts {
  confPath: string;
  /** For clients: SLURM_CONF, and none of the bench's own SLURM_*. */
  env: NodeJS.ProcessEnv;
  login: Namespace;
  /** A client on the login node, to its end; its stdout, or an error with its stderr. */
  client(argv: readonly string[]): Promise<string>;
  stop(): Promise<void>;
}

export interface Allocation {
  jobId: string;
  /** The environment of a process inside the allocation (salloc's command's SLURM_*), for the login node. */
  env: NodeJS.ProcessEnv;
  release(): Promise<void>;
}

/** null when this machine has Slurm's programs, else why not. */
export function whyNoSlurm(): string | null {
  const missing = SLURM_PROGRAMS.filter((p) => !which(p));
  return missing.length > 0 ? `${missing.join(', ')} not installed (Debian package slurm-wlm)` : null;
}

/** slurmctld and one slurmd per host, every node idle, or an error naming the logs. */
export async function startSlurmHosts(net: HostNetwork, dir: string, cores: number): Promise<SlurmHosts> {
  for (const d of ['state', 'logs', 'work', ...net.hosts.map((h) => path.join('spool', h.name))])
    mkdirSync(path.join(dir, d), { recursive: true });
  const confPath = path.join(dir, 'slurm.conf');
  writeFileSync(confPath, slurmConf(dir, net, cores));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SLURM_')) env[k] = v;
  env['SLURM_CONF'] = confPath;
  const login = net.controller;
  const logFile = (name: string) => path.join(dir, 'logs', `${name}.out`);
  const daemons: Daemon[] = [
    // -c: a clean state, never one a previous run left
    net.startIn(login, 'slurmctld', [which('slurmctld')!, '-D', '-c', '-f', confPath], {
      logFile: logFile('slurmctld'),
      env,
    }),
    ...net.hosts.map((h) =>
      net.startIn(h, `slurmd ${h.name}`, withCgroups([which('slurmd')!, '-D', '-N', h.name, '-f', confPath]), {
        logFile: logFile(`slurmd-${h.name}`),
        env,
      }),
    ),
  ];
  const client = (argv: readonly string[]) => net.runIn(login, argv, { env, timeoutMs: CLIENT_TIMEOUT_MS });
  const stop = async () => {
    // jobs first: a slurmstepd whose slurmd is gone lingers (the network's teardown kills what is left by pid)
    await client(['scancel', '--quiet', '--user=root']).catch(() => undefined);
    await waitFor(async () => (await client(['squeue', '-h', '-o', '%i']).catch(() => '')).trim() === '', 10_000);
    for (const d of [...daemons].reverse()) await d.stop(5000);
  };
  const idle = await waitFor(async () => {
    if (daemons.some((d) => d.exited)) return true;
    const out = await client(['sinfo', '-h', '-N', '-o', '%N %T']).catch(() => '');
    return out.split('\n').filter((l) => / idle$/.test(l.trim())).length === net.hosts.length;
  }, READY_TIMEOUT_MS);
  const dead = daemons.find((d) => d.exited);
  if (dead || !idle) {
    await stop();
    throw new Error(
      dead
        ? `${dead.name} exited at start: ${tail(dead.logFile)}`
        : `the Slurm nodes were not idle within ${READY_TIMEOUT_MS / 1000} s (logs in ${dir}/logs)`,
    );
  }
  return { confPath, env, login, client, stop };
}

/**
 * `salloc -N <hosts> --immediate` on the login node, held open by its command, which writes
 * its environment (what a shell inside the allocation has) to a file: every measured command
 * then runs with it, as if typed at salloc's prompt.
 */
export async function holdAllocation(net: HostNetwork, slurm: SlurmHosts, dir: string): Promise<Allocation> {
  const envFile = path.join(dir, 'allocation.env');
  rmSync(envFile, { force: true });
  const hold = `env -0 > ${envFile}.part && mv ${envFile}.part ${envFile} && exec sleep 3600`;
  const salloc = net.startIn(
    slurm.login,
    'salloc',
    ['salloc', `--immediate=${IMMEDIATE_S}`, `--nodes=${net.hosts.length}`, '/bin/sh', '-c', hold],
    { logFile: path.join(dir, 'logs', 'salloc.out'), env: slurm.env },
  );
  let allocEnv: Record<string, string> | null = null;
  await waitFor(
    () => {
      if (salloc.exited) return true;
      try {
        allocEnv = parseEnv(readFileSync(envFile, 'utf8'));
        return true;
      } catch {
        return false;
      }
    },
    (IMMEDIATE_S + 10) * 1000,
  );
  const env = allocEnv as Record<string, string> | null;
  const jobId = env?.['SLURM_JOB_ID'];
  const release = async () => {
    if (jobId) await slurm.client(['scancel', jobId]).catch(() => undefined);
    await salloc.stop(5000);
  };
  if (!env || !jobId || salloc.exited) {
    await release();
    throw new Error(`salloc got no allocation of ${net.hosts.length} nodes: ${tail(salloc.logFile)}`);
  }
  const inside: NodeJS.ProcessEnv = { ...slurm.env };
  for (const [k, v] of Object.entries(env)) if (k.startsWith('SLURM_')) inside[k] = v;
  // A per-job directory of this run's own, as sites that set SLURM_TMPDIR give each job:
  // job ids restart at 1 with every throw-away Slurm, and the cluster tests' Slurm runs on
  // the same machine (and /tmp) at the same time, so /tmp/rankd-<job> could be theirs.
  inside['SLURM_TMPDIR'] = path.join(dir, `job-${jobId}`);
  mkdirSync(inside['SLURM_TMPDIR'], { recursive: true });
  return { jobId, env: inside, release };
}

/** Mount options that say how a hierarchy is mounted, not which one it is. */
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

/**
 * `ip netns exec` mounts a fresh sysfs on /sys, with nothing under /sys/fs/cgroup: slurmd
 * will not start without its cgroup plugin's hierarchies, and the ephemeral agents in its
 * steps read their cpuset there. As withCgroupView of test/cluster/harness/slurm-cgroups.ts
 * (without its per-host Slurm roots, which only task/cgroup and proctrack/cgroup use), the
 * machine's v1 hierarchies are mounted again at /sys/fs/cgroup in the host's own mount
 * namespace: the same hierarchies, whole, that the root namespace never sees mounted twice.
 * Names and options are arguments of a fixed script; `exec` keeps the pid slurmd's own.
 */
function withCgroups(argv: readonly string[]): string[] {
  const script = [
    'set -e',
    'mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup',
    'while [ "$1" != -- ]; do',
    '  mkdir "/sys/fs/cgroup/$1"',
    '  mount -t cgroup -o "$2" cgroup "/sys/fs/cgroup/$1"',
    '  shift 2',
    'done',
    'shift',
    'exec "$@"',
  ].join('\n');
  const pairs = cgroupV1Hierarchies().flatMap((h) => [h.dir, h.options]);
  return ['/bin/sh', '-c', script, 'slurmd-cgroups', ...pairs, '--', ...argv];
}

/** The v1 hierarchies mounted under /sys/fs/cgroup: their directory and the options that select them. */
function cgroupV1Hierarchies(): Array<{ dir: string; options: string }> {
  const out: Array<{ dir: string; options: string }> = [];
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, where, type, opts] = line.split(' ');
    if (type !== 'cgroup' || !where?.startsWith('/sys/fs/cgroup/')) continue;
    const options = (opts ?? '').split(',').filter((o) => !MOUNT_FLAGS.has(o));
    out.push({ dir: where.slice('/sys/fs/cgroup/'.length), options: options.join(',') });
  }
  return out;
}

function parseEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of text.split('\0')) {
    const at = entry.indexOf('=');
    if (at > 0) out[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return out;
}

function slurmConf(dir: string, net: HostNetwork, cores: number): string {
  return [
    'ClusterName=rankdbench',
    // "localhost" is the name slurmctld accepts on any machine; the address is what clients dial
    `SlurmctldHost=localhost(${net.controller.address})`,
    `SlurmctldPort=${SLURMCTLD_PORT}`,
    `SlurmdPort=${SLURMD_PORT}`,
    ...BENCH_SLURM_SETTINGS,
    `StateSaveLocation=${dir}/state`,
    // %n is the NodeName (slurmd -N): one spool, pid file and log per node
    `SlurmdSpoolDir=${dir}/spool/%n`,
    `SlurmctldPidFile=${dir}/slurmctld.pid`,
    `SlurmdPidFile=${dir}/slurmd-%n.pid`,
    `SlurmctldLogFile=${dir}/logs/slurmctld.log`,
    `SlurmdLogFile=${dir}/logs/slurmd-%n.log`,
    ...net.hosts.map(
      (h) =>
        `NodeName=${h.name} NodeAddr=${h.address} Sockets=1 CoresPerSocket=${cores} ThreadsPerCore=1 State=UNKNOWN`,
    ),
    `PartitionName=bench Nodes=${net.hosts.map((h) => h.name).join(',')} Default=YES MaxTime=INFINITE State=UP`,
    '',
  ].join('\n');
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' | ');
  } catch {
    return '(no log)';
  }
}
