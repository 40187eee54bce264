// `rankd run`: srun for rankd. Plans, launches pinned ranks, streams their labelled
// output, and exits with the job's code. Ctrl-C cancels the job and waits for its
// ranks to end; a second Ctrl-C detaches.
import type { Command } from 'commander';
import type { JobSubmit } from '@rankd/protocol';
import { MPI_MODES, type MpiMode } from '@rankd/protocol/mpi-modes';
import { checkJobEnvSize } from '@rankd/protocol/export-env';
import { loadClientConfig } from '../client/config.js';
import { runJob } from '../client/run-job.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { exportedEnv } from '../export-env.js';
import { integer } from '../options.js';
import { addPlacementOptions, placementSpecFromOptions, type PlacementOptions } from '../placement-flags.js';

interface RunFlags extends PlacementOptions {
  quiet?: boolean;
  label: boolean;
  labelFormat: string;
  grace?: string;
  timeout?: string;
  pty?: boolean;
  user?: string;
  cwd?: string;
  failPolicy?: 'fail-fast' | 'wait';
  name?: string;
  mpi?: string;
  priority?: number;
  immediate?: boolean;
  export?: string;
}

export function register(program: Command): void {
  const cmd = program
    .command('run')
    .description('launch pinned ranks and stream their output (like srun); exits with the job\'s code')
    .usage('[placement flags] [options] -- CMD [ARGS…]')
    .argument('<command...>', 'the program and its arguments (after --)')
    .option('-q, --quiet', 'do not print the rank map on stderr')
    .option('--no-label', 'raw output, without the "RANK: " prefix')
    .option('--label-format <template>', 'line prefix; fields {rank} {node} {localRank} {stream}', '{rank}: ')
    .option('--grace <seconds>', 'between SIGTERM and SIGKILL when ranks are ended (default 10)')
    .option('--timeout <seconds>', 'end the job as timed-out after this long')
    .option('--fail-policy <policy>', 'fail-fast (default): the first failing rank ends the job; wait: let the others finish')
    .option('--pty', 'run each rank under a pseudo-terminal')
    .option('--user <name>', 'run the ranks as this user')
    .option('--cwd <dir>', 'working directory of the ranks (default: this one)')
    .option('--name <name>', 'a name for the job')
    .option('--priority <N>', 'queue order, higher first (default 0; above 0 for operators and admins)', integer)
    .option('--immediate', 'start now or fail at once with the reason (exit 65); never wait in the queue')
    .option('--export <ALL|NONE|VAR[,VAR=value…]>', 'which of your variables the ranks get, as srun\'s --export (default ALL; never RANKD_* or SLURM_*); rankd\'s RANK, WORLD_SIZE, … win over them, --env over both')
    .option('--mpi <mode>', 'MPI wire-up: pmi1 (default: a PMI-1 server per rank, for MPICH and Intel MPI), openmpi (Open MPI\'s mpirun through the agents), none');
  addPlacementOptions(cmd);
  cmd.action(async (command: string[], flags: RunFlags) => {
    const config = loadClientConfig();
    const placement = placementSpecFromOptions(flags);
    const exportEnv = exportedEnv(flags.export, process.env);
    checkEnvSize(exportEnv, placement.env);
    const submit: JobSubmit = {
      command,
      placement,
      exportEnv,
      cwd: flags.cwd ?? process.cwd(),
      ...(flags.name ? { name: flags.name } : {}),
      ...(flags.user ? { user: flags.user } : {}),
      ...(flags.pty ? { pty: true } : {}),
      ...(flags.grace !== undefined ? { grace: seconds('--grace', flags.grace, true) } : {}),
      ...(flags.timeout !== undefined ? { timeout: seconds('--timeout', flags.timeout, false) } : {}),
      ...(flags.failPolicy ? { failPolicy: failPolicy(flags.failPolicy) } : {}),
      ...(flags.mpi !== undefined ? { mpi: mpiMode(flags.mpi) } : {}),
      ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
      ...(flags.immediate ? { immediate: true } : {}),
    };
    process.exitCode = await runJob(config, submit, { quiet: flags.quiet ?? false, label: flags.label ? flags.labelFormat : '' });
  });
}

/** The bound on the ranks' environment (export-env.ts in the protocol), before any request. */
function checkEnvSize(exported: Record<string, string>, explicit: Record<string, string> | undefined): void {
  try {
    checkJobEnvSize({ exported, explicit });
  } catch (err) {
    // the controller's words and code, as if it had answered: nothing was sent
    throw new CliError(`${(err as Error).message} (${(err as { code?: string }).code})`, ExitCode.Usage);
  }
}

function seconds(flag: string, text: string, zeroOk: boolean): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || (!zeroOk && n === 0)) throw new CliError(`${flag} takes a number of seconds, not "${text}"`, ExitCode.Usage);
  return n;
}

function failPolicy(text: string): 'fail-fast' | 'wait' {
  if (text !== 'fail-fast' && text !== 'wait') throw new CliError(`--fail-policy is fail-fast or wait, not "${text}"`, ExitCode.Usage);
  return text;
}

function mpiMode(text: string): MpiMode {
  if (!(MPI_MODES as readonly string[]).includes(text)) throw new CliError(`--mpi is one of ${MPI_MODES.join(', ')}, not "${text}"`, ExitCode.Usage);
  return text as MpiMode;
}
