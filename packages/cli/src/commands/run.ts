// `rankd run`: srun for rankd. Plans, launches pinned ranks, streams their labelled
// output, and exits with the job's code. Ctrl-C cancels the job and waits for its
// ranks to end; a second Ctrl-C detaches.
import type { Command } from 'commander';
import type { JobSubmit } from '@rankd/protocol';
import {
  DEFAULT_JOB_GRACE_SECONDS,
  JOB_GRACE_SECONDS,
  JOB_MAX_RESTARTS,
  JOB_NAME_CHARS,
  JOB_RESTART_DELAY_SECONDS,
  JOB_TIMEOUT_SECONDS,
  NET_CHECK_THRESHOLD,
  PRIORITY,
} from '@rankd/protocol/limits';
import { MPI_MODES, type MpiMode } from '@rankd/protocol/mpi-modes';
import { checkJobEnvSize } from '@rankd/protocol/export-env';
import { loadClientConfig } from '../client/config.js';
import { runJob } from '../client/run-job.js';
import { stdinOf } from '../input-flag.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { exportedEnv } from '../export-env.js';
import { integerIn, oneOf, secondsIn, textOf } from '../options.js';
import { restartOnOf } from '../restart-flags.js';
import { addPlacementOptions, placementSpecFromOptions, type PlacementOptions } from '../placement-flags.js';
import { programAfterOperands } from '../program-argv.js';
import { fraction } from './check.js';

type FailPolicy = NonNullable<JobSubmit['failPolicy']>;
const FAIL_POLICIES: readonly FailPolicy[] = ['fail-fast', 'wait'];

interface RunFlags extends PlacementOptions {
  quiet?: boolean;
  label: boolean;
  labelFormat: string;
  /** Seconds. */
  grace?: number;
  /** Seconds. */
  timeout?: number;
  pty?: boolean;
  user?: string;
  cwd?: string;
  failPolicy?: FailPolicy;
  name?: string;
  mpi?: MpiMode;
  priority?: number;
  immediate?: boolean;
  export?: string;
  input?: string;
  maxRestarts?: number;
  restartOn?: NonNullable<JobSubmit['restartOn']>;
  /** Seconds. */
  restartDelay?: number;
  preflight?: boolean;
  preflightThreshold?: number;
}

export function register(program: Command): void {
  const cmd = program
    .command('run')
    .description("launch pinned ranks and stream their output (like srun); exits with the job's code")
    .usage('[placement flags] [options] [--] CMD [ARGS…]')
    .argument(
      '<command...>',
      "the program and its arguments: every word from the first one that is not an option (or after --) is the program's",
    )
    .option('-q, --quiet', 'do not print the rank map and its warnings on stderr')
    .option('--no-label', 'raw output, without the "RANK: " prefix')
    .option('--label-format <template>', 'line prefix; fields {rank} {node} {localRank} {stream}', '{rank}: ')
    .option(
      '--grace <time>',
      `between SIGTERM and SIGKILL when ranks are ended: seconds or a duration (default ${DEFAULT_JOB_GRACE_SECONDS}, at most ${JOB_GRACE_SECONDS.max}s)`,
      secondsIn(JOB_GRACE_SECONDS),
    )
    .option(
      '--timeout <time>',
      'end the job as timed-out after this long: seconds or a duration (30s, 15m, 2h)',
      secondsIn(JOB_TIMEOUT_SECONDS),
    )
    .option(
      '--fail-policy <policy>',
      'fail-fast (default): the first failing rank ends the job; wait: let the others finish',
      oneOf(FAIL_POLICIES),
    )
    .option('--pty', 'run each rank under a pseudo-terminal')
    .option('--user <name>', 'run the ranks as this user')
    .option('--cwd <dir>', 'working directory of the ranks (default: this one)')
    .option('--name <name>', `a name for the job (at most ${JOB_NAME_CHARS.max} characters)`, textOf(JOB_NAME_CHARS))
    .option(
      '--priority <N>',
      `queue order, higher first (default 0; above 0 for operators and admins; ${PRIORITY.min} to ${PRIORITY.max})`,
      integerIn(PRIORITY),
    )
    .option('--immediate', 'start now or fail at once with the reason (exit 65); never wait in the queue')
    .option(
      '--export <ALL|NONE|VAR[,VAR=value…]>',
      "which of your variables the ranks get, as srun's --export (default ALL; never RANKD_* or SLURM_*); rankd's RANK, WORLD_SIZE, … win over them, --env over both",
    )
    .option(
      '--input <who>',
      'which ranks read this stdin, as srun --input: a rank (default 0), all (each a copy), none; the others read /dev/null',
    )
    .option(
      '--max-restarts <N>',
      `start the job again, up to N times, when an attempt fails (default 0; at most ${JOB_MAX_RESTARTS.max}); ` +
        "every rank of the attempt is ended first; rankd run follows every attempt and exits with the last one's code",
      integerIn(JOB_MAX_RESTARTS),
    )
    .option(
      '--restart-on <when>',
      'which failures restart it: any (default), node-lost, or exit codes (e.g. 1,137)',
      restartOnOf,
    )
    .option(
      '--restart-delay <time>',
      'wait this long before the next attempt (default 0); restarts within a minute of each other back off, doubling',
      secondsIn(JOB_RESTART_DELAY_SECONDS),
    )
    .option(
      '--preflight',
      "measure the job's nodes before its ranks start (1 s probes, as rankd check net); a slow node is left out " +
        'and the job planned again where its placement allows, else the job fails with the finding (exit 65)',
    )
    .option(
      '--preflight-threshold <fraction>',
      `with --preflight: a link below this fraction of its rail's median is slow ` +
        `(default ${NET_CHECK_THRESHOLD.default})`,
      fraction,
    )
    .option(
      '--mpi <mode>',
      "MPI wire-up: pmi1 (default: a PMI-1 server per rank, for MPICH and Intel MPI), openmpi (Open MPI's mpirun through the agents), none",
      oneOf(MPI_MODES),
    );
  addPlacementOptions(cmd);
  cmd.addHelpText(
    'after',
    `
stdin:
  Rank 0 reads this command's stdin, to its end (EOF), as with mpirun; the other ranks read
  /dev/null. --input all gives every rank a copy, --input N rank N alone, --input none no rank.
  Bytes go as they are, as fast as the ranks read them. A second Ctrl-C (detach) ends it:
  the ranks read EOF. With --pty or --mpi openmpi, stdin is not forwarded.
  echo hi | rankd run -n 1 -- cat          # prints hi
  rankd run -n 4 --input all -- wc -c < data

restarts (--max-restarts N):
  When an attempt fails and the job starts again, one line on stderr says why (even with -q):
  rankd: attempt 1/3 failed: rank 5 on node c exited 1 (last line: "CUDA error …"); restarting without node c in 0 s
  then the new attempt's rank map, and its output. Attempts count from 1 here (RANKD_ATTEMPT is
  0-based). The exit code is the last attempt's. A job with restarts reads no stdin.
  rankd logs ID --attempt K shows one attempt; rankd job ID lists them.

preflight (--preflight):
  Once the job is planned, and before any rank starts, its nodes measure each other for 1 s
  (one round of rankd check net's schedule; then each node that round flagged, or left out
  of its pairs, against a node it found healthy). The job stays queued meanwhile, and says so.
  A flagged node is left out and the job planned again without it, unless the job names its
  nodes (--nodelist) or cannot run without it: then it fails with the finding (exit 65,
  RANKD_PREFLIGHT_FAILED). The check is stored: rankd check net --last, GET /v1/checks.
  rankd run --preflight -N 4 -- ./train
  rankd: job j-… queued: preflight: host1 left out: 1 of 1 links flagged: host2→host1 186 Mbit/s,
    10 % of the tcp median 1.82 Gbit/s; planning again without it (check c-…)`,
  );
  programAfterOperands(cmd, 0);
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
      ...(flags.grace !== undefined ? { grace: flags.grace } : {}),
      ...(flags.timeout !== undefined ? { timeout: flags.timeout } : {}),
      ...(flags.failPolicy ? { failPolicy: flags.failPolicy } : {}),
      ...(flags.mpi !== undefined ? { mpi: flags.mpi } : {}),
      ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
      ...(flags.immediate ? { immediate: true } : {}),
      ...(flags.maxRestarts !== undefined ? { maxRestarts: flags.maxRestarts } : {}),
      ...(flags.restartOn !== undefined ? { restartOn: flags.restartOn } : {}),
      ...(flags.restartDelay !== undefined ? { restartDelay: flags.restartDelay } : {}),
      ...preflightOf(flags),
      ...stdinOf(flags),
    };
    process.exitCode = await runJob(config, submit, {
      quiet: flags.quiet ?? false,
      label: flags.label ? flags.labelFormat : '',
    });
  });
}

function preflightOf(flags: RunFlags): Pick<JobSubmit, 'preflight' | 'preflightThreshold'> {
  if (flags.preflightThreshold !== undefined && !flags.preflight)
    throw new CliError('--preflight-threshold is the threshold of --preflight: give --preflight too', ExitCode.Usage);
  if (!flags.preflight) return {};
  const threshold = flags.preflightThreshold;
  return { preflight: true, ...(threshold !== undefined ? { preflightThreshold: threshold } : {}) };
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
