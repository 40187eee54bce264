// A throw-away Slurm on localhost: one slurmctld and one slurmd, started by this run in
// the foreground (-D) so that their pids are ours, with all state in a temp dir and
// ports picked free on loopback. auth/none + cred/none needs no munge key.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startDaemon, waitFor, type Daemon } from '../lib/child.js';
import { freeLoopbackPort } from '../lib/ports.js';
import { onTeardown } from '../lib/teardown.js';
import { which } from '../lib/which.js';

const run = promisify(execFile);

export interface LocalSlurm {
  /** Environment for clients (srun, sinfo): SLURM_CONF points at this run's config. */
  env: NodeJS.ProcessEnv;
  confPath: string;
  cpus: number;
  /** argv for `srun -n N cmd…`, bounded: --immediate so an oversized request fails instead of pending. */
  srun(ntasks: number, command: readonly string[]): string[];
  stop(): Promise<void>;
}

export const SLURM_READY_TIMEOUT_MS = 30_000;

/**
 * What every throw-away Slurm of the bench runs with, beside its addresses, paths and nodes:
 * no munge, no cgroups, no accounting, and node lines that win over what slurmd detects.
 */
export const BENCH_SLURM_SETTINGS: readonly string[] = [
  'AuthType=auth/none',
  'CredType=cred/none',
  'SlurmUser=root',
  'SlurmdUser=root',
  'SlurmctldDebug=info',
  'SlurmdDebug=info',
  // linuxproc needs no cgroup setup, which a container may not allow.
  'ProctrackType=proctrack/linuxproc',
  'TaskPlugin=task/affinity',
  'SchedulerType=sched/builtin',
  'SelectType=select/cons_tres',
  'SelectTypeParameters=CR_Core',
  'MpiDefault=none',
  'ReturnToService=2',
  'InactiveLimit=0',
  // Finished jobs leave the controller's tables quickly, so a long bench does not grow its state.
  'MinJobAge=2',
  'KillWait=2',
  'JobCompType=jobcomp/none',
  'JobAcctGatherType=jobacct_gather/none',
  'AccountingStorageType=accounting_storage/none',
  // The node lines are what we want Slurm to schedule, whatever slurmd detects.
  'SlurmdParameters=config_overrides',
];

export function slurmConf(dir: string, ports: { ctld: number; slurmd: number }, cpus: number): string {
  return [
    'ClusterName=rankdbench',
    'SlurmctldHost=localhost(127.0.0.1)',
    `SlurmctldPort=${ports.ctld}`,
    `SlurmdPort=${ports.slurmd}`,
    ...BENCH_SLURM_SETTINGS,
    `StateSaveLocation=${dir}/state`,
    `SlurmdSpoolDir=${dir}/spool`,
    `SlurmctldPidFile=${dir}/slurmctld.pid`,
    `SlurmdPidFile=${dir}/slurmd.pid`,
    `SlurmctldLogFile=${dir}/slurmctld.log`,
    `SlurmdLogFile=${dir}/slurmd.log`,
    `NodeName=localhost NodeAddr=127.0.0.1 Sockets=1 CoresPerSocket=${cpus} ThreadsPerCore=1 State=UNKNOWN`,
    'PartitionName=bench Nodes=localhost Default=YES MaxTime=INFINITE State=UP',
    '',
  ].join('\n');
}

export async function startLocalSlurm(dir: string, log: (m: string) => void): Promise<LocalSlurm> {
  for (const bin of ['slurmctld', 'slurmd', 'srun', 'sinfo']) {
    if (!which(bin)) throw new Error(`${bin} is not installed (Debian package slurm-wlm)`);
  }
  mkdirSync(path.join(dir, 'state'), { recursive: true });
  mkdirSync(path.join(dir, 'spool'), { recursive: true });
  const cpus = os.availableParallelism();
  const ports = { ctld: await freeLoopbackPort(), slurmd: await freeLoopbackPort() };
  // two probes in a row may be handed the same free port: the daemons need two
  for (let tries = 0; ports.slurmd === ports.ctld && tries < 10; tries++) ports.slurmd = await freeLoopbackPort();
  const confPath = path.join(dir, 'slurm.conf');
  writeFileSync(confPath, slurmConf(dir, ports, cpus));
  const env = { ...process.env, SLURM_CONF: confPath };

  const daemons: Daemon[] = [];
  const stopAll = async () => {
    // Steps first: a slurmstepd whose slurmd is gone lingers, detached from every pid we hold.
    if (daemons.length === 2 && !daemons.some((d) => d.exited)) await drainJobs(env, dir);
    for (const d of [...daemons].reverse()) await d.stop();
  };
  const untrack = onTeardown('local slurm', stopAll);
  const fail = async (why: string): Promise<never> => {
    await untrack();
    throw new Error(`${why}; see ${dir}/slurmctld.log and ${dir}/slurmd.log`);
  };

  // -c: start from an empty state rather than one a previous run left in the same dir.
  daemons.push(
    startDaemon('slurmctld', [which('slurmctld')!, '-D', '-c', '-f', confPath], {
      logFile: path.join(dir, 'slurmctld.out'),
      env,
    }),
  );
  daemons.push(
    startDaemon('slurmd', [which('slurmd')!, '-D', '-N', 'localhost', '-f', confPath], {
      logFile: path.join(dir, 'slurmd.out'),
      env,
    }),
  );
  log(
    `local slurm: slurmctld pid ${daemons[0]!.pid} port ${ports.ctld}, slurmd pid ${daemons[1]!.pid} port ${ports.slurmd}`,
  );

  const ready = await waitFor(async () => {
    if (daemons.some((d) => d.exited)) return true;
    try {
      const { stdout } = await run('sinfo', ['-h', '-N', '-o', '%T'], { env, timeout: 5000 });
      return /^idle/m.test(stdout);
    } catch {
      return false;
    }
  }, SLURM_READY_TIMEOUT_MS);
  const dead = daemons.find((d) => d.exited);
  if (dead) return fail(`${dead.name} exited at start: ${tail(dead.logFile)}`);
  if (!ready) return fail(`local slurm did not report an idle node within ${SLURM_READY_TIMEOUT_MS / 1000} s`);

  return {
    env,
    confPath,
    cpus,
    srun: (ntasks, command) => ['srun', '--immediate=1', '--quiet', `--ntasks=${ntasks}`, ...command],
    stop: untrack,
  };
}

const DRAIN_TIMEOUT_MS = 15_000;

/**
 * Cancels whatever jobs this cluster still has and waits until none is left and no step
 * socket remains in the spool (slurmstepd holds one per running step).
 */
async function drainJobs(env: NodeJS.ProcessEnv, dir: string): Promise<void> {
  const jobsLeft = async () => {
    try {
      const { stdout } = await run('squeue', ['-h', '-o', '%i'], { env, timeout: 5000 });
      return stdout.trim() !== '';
    } catch {
      return false;
    }
  };
  const stepsLeft = () => readdirSync(path.join(dir, 'spool')).some((f) => /_\d+\.\d+$/.test(f));
  if (!(await jobsLeft()) && !stepsLeft()) return;
  try {
    await run('scancel', ['--quiet', `--user=${os.userInfo().username}`], { env, timeout: 5000 });
  } catch {
    // nothing to cancel, or the controller is already going
  }
  await waitFor(async () => !(await jobsLeft()) && !stepsLeft(), DRAIN_TIMEOUT_MS, 250);
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' | ');
  } catch {
    return '(no log)';
  }
}
