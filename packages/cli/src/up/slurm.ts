// What rankd asks of Slurm: the allocation it runs in, its nodes and their addresses, and
// the steps that carry rankd's daemons. Only Slurm's own commands are used (scontrol,
// squeue, scancel, srun), each with a bounded wait, never its files or its protocol.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CliError, ExitCode } from '../exit-codes.js';

const run = promisify(execFile);
const SLURM_COMMAND_TIMEOUT_MS = 15_000;

/** The names of rankd's steps, by which `rankd down` finds them from any host. */
export const STEP_NAMES = { controller: 'rankd-controller', agents: 'rankd-agents' } as const;

export interface Allocation {
  jobId: string;
  /** SLURM_JOB_NODELIST, compressed (node[1-3]). */
  nodelist: string;
  /** The node this command runs on when it runs inside the allocation (a batch script, srun --pty). */
  here: string | null;
}

/** Run by an sbatch script (sbatch sets ENVIRONMENT=BATCH; salloc does not). */
export function inBatchScript(env: NodeJS.ProcessEnv): boolean {
  return env['ENVIRONMENT'] === 'BATCH';
}

/** The allocation this process runs in, or exit 64 saying how to get one. */
export function allocationOf(env: NodeJS.ProcessEnv): Allocation {
  const jobId = env['SLURM_JOB_ID'] ?? env['SLURM_JOBID'];
  const nodelist = env['SLURM_JOB_NODELIST'] ?? env['SLURM_NODELIST'];
  if (!jobId || !nodelist)
    throw new CliError(
      `--slurm runs inside a Slurm allocation, and ${jobId ? 'SLURM_JOB_NODELIST' : 'SLURM_JOB_ID'} is not set: ` +
        'run it under salloc ("salloc -N 4", then "rankd up --slurm") or in an sbatch script (RANKD_NOT_IN_ALLOCATION)',
      ExitCode.Usage,
    );
  if (!/^\d+$/.test(jobId)) throw new CliError(`SLURM_JOB_ID "${jobId}" is not a job id`, ExitCode.Usage);
  return { jobId, nodelist, here: env['SLURMD_NODENAME'] ?? null };
}

/** The per-job directory on each node: $SLURM_TMPDIR where the site sets one, else /tmp/rankd-JOBID. */
export function slurmWorkDir(env: NodeJS.ProcessEnv, jobId: string): string {
  const siteTmp = env['SLURM_TMPDIR'];
  return siteTmp ? join(siteTmp, 'rankd') : `/tmp/rankd-${jobId}`;
}

async function slurm(command: string, args: readonly string[]): Promise<string> {
  try {
    return (await run(command, args, { timeout: SLURM_COMMAND_TIMEOUT_MS })).stdout;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT')
      throw new CliError(`${command} is not on the PATH: Slurm's client commands are needed`, ExitCode.Unreachable);
    throw new CliError(
      `${command} ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim().split('\n')[0]}`,
      ExitCode.Unreachable,
    );
  }
}

/** node[1-3],gpu7 → node1 node2 node3 gpu7, as Slurm expands it. */
export async function expandNodelist(nodelist: string): Promise<string[]> {
  const names = (await slurm('scontrol', ['show', 'hostnames', nodelist])).split('\n').filter(Boolean);
  if (names.length === 0) throw new CliError(`the nodelist "${nodelist}" names no node`, ExitCode.Usage);
  return names;
}

/** The address Slurm reaches a node at (its NodeAddr; the node name where none is set). */
export async function nodeAddress(node: string): Promise<string> {
  const line = await slurm('scontrol', ['show', 'node', '--oneliner', node]);
  const addr = /(?:^|\s)NodeAddr=(\S+)/.exec(line)?.[1];
  if (!addr) throw new CliError(`scontrol show node ${node} printed no NodeAddr`, ExitCode.Unreachable);
  return addr;
}

/** srun's options for one of rankd's steps: beside the job's own steps, unbound, one task per node. */
export function stepLauncher(name: string, nodes: readonly string[]): string[] {
  return [
    'srun',
    '--overlap',
    `--job-name=${name}`,
    `--nodes=${nodes.length}`,
    `--ntasks=${nodes.length}`,
    '--ntasks-per-node=1',
    `--nodelist=${nodes.join(',')}`,
    '--cpu-bind=none',
    // a daemon that exits is reported by rankd; the others stay until rankd ends the step
    '--kill-on-bad-exit=0',
  ];
}

/** The ids (JOB.STEP) of rankd's steps in the job. */
export async function rankdSteps(jobId: string): Promise<string[]> {
  const out = await slurm('squeue', ['--steps', `--jobs=${jobId}`, '--noheader', '--format=%i %j']);
  const names = new Set<string>(Object.values(STEP_NAMES));
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([id, name]) => id && name && names.has(name))
    .map(([id]) => id!);
}

/**
 * Ends rankd's steps of the job: SIGTERM (the daemons remove their directories), then, for
 * any still there after `graceMs`, Slurm's own cancel. Resolves with the steps that had to be
 * cancelled; fails naming the steps still there after that.
 */
export async function endSteps(jobId: string, graceMs: number): Promise<string[]> {
  let steps = await rankdSteps(jobId);
  if (steps.length === 0) return [];
  for (const step of steps) await signalStep(step, ['--signal=TERM']);
  steps = await whileSteps(jobId, graceMs);
  const cancelled = steps;
  for (const step of steps) await signalStep(step, []);
  steps = await whileSteps(jobId, graceMs);
  if (steps.length > 0)
    throw new CliError(`rankd's steps ${steps.join(' ')} are still there after scancel`, ExitCode.Unreachable);
  return cancelled;
}

/**
 * scancel of one step, whose outcome squeue tells: Slurm 22.05's scancel signals a one-node
 * step and still fails ("Kill job error on job step id N: Invalid job id specified"), and
 * given two steps of one job, fails on the second.
 */
async function signalStep(step: string, args: readonly string[]): Promise<void> {
  await slurm('scancel', [...args, step]).catch(() => undefined);
}

/** rankd's steps of the job once they are gone or `ms` has passed. */
async function whileSteps(jobId: string, ms: number): Promise<string[]> {
  const deadline = Date.now() + ms;
  let steps = await rankdSteps(jobId);
  while (steps.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    steps = await rankdSteps(jobId);
  }
  return steps;
}
