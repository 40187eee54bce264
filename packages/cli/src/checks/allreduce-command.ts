// `rankd check allreduce [placement flags]`: an allreduce sweep over doubling message sizes,
// run by the controller as a job of the caller's, placed and pinned as `rankd run` would
// place it (the same flags), with the planner's transport environment. nccl-tests'
// all_reduce_perf where the nodes have it, else rankd's MPI benchmark, built on each node
// with its MPICH. Exits 1 when an element was summed wrong or the job failed.
import { InvalidArgumentError, type Command } from 'commander';
import type { AllreduceCheckRequest, AllreduceCheckResult } from '@rankd/protocol';
import { ALLREDUCE_BYTES, ALLREDUCE_ITERATIONS, ALLREDUCE_TIMEOUT_S } from '@rankd/protocol/limits';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { byteSize, integerIn, secondsIn } from '../options.js';
import { addPlacementOptions, placementSpecFromOptions, type PlacementOptions } from '../placement-flags.js';
import { renderAllreduce } from './allreduce-report.js';

/** Exit status of a sweep that found wrong sums or whose job failed. */
const SWEEP_FAILED = 1;
/** The controller answers when the job ends: its timeout, then a margin for the rest. */
const ANSWER_MARGIN_MS = 60_000;

interface AllreduceFlags extends PlacementOptions {
  minBytes?: number;
  maxBytes?: number;
  iterations?: number;
  timeout?: number;
  last?: boolean;
  json?: boolean;
}

/** 8, 1K, 256M, 1GiB → bytes, within the sweep's bounds. */
function sweepBytes(value: string): number {
  const n = byteSize(value);
  if (n < ALLREDUCE_BYTES.min || n > ALLREDUCE_BYTES.max)
    throw new InvalidArgumentError(`"${value}" is out of range (${ALLREDUCE_BYTES.min} B to 8G)`);
  return n;
}

export function registerAllreduce(check: Command): void {
  const cmd = check
    .command('allreduce')
    .description(
      'an allreduce sweep from --min-bytes to --max-bytes (doubling), run as a job placed and pinned as ' +
        "`rankd run` places it: nccl-tests' all_reduce_perf where installed, else rankd's MPI benchmark built " +
        "with the node's MPICH mpicc; prints time, algbw and busbw per size",
    )
    .usage('[placement flags] [--min-bytes B] [--max-bytes B] [--iterations N] [--timeout T] [--json] | --last');
  addPlacementOptions(cmd)
    .option('--min-bytes <size>', 'smallest message: 8, 1K, 256M … (default 8)', sweepBytes)
    .option('--max-bytes <size>', 'largest message (default 256M)', sweepBytes)
    .option(
      '--iterations <n>',
      `timed iterations per size (default ${ALLREDUCE_ITERATIONS.default}; ` +
        "rankd's benchmark runs fewer above 8 MiB, at least 5)",
      integerIn(ALLREDUCE_ITERATIONS),
    )
    .option(
      '--timeout <T>',
      "end the sweep's job after T (default: 60 s + 20 s per size)",
      secondsIn(ALLREDUCE_TIMEOUT_S),
    )
    .option('--last', 'print the last stored sweep instead of running one')
    .option('--json', 'print the stored result as JSON')
    .action(async (flags: AllreduceFlags) => {
      const result = flags.last ? await lastSweep(flags) : await runSweep(flags);
      process.stdout.write(flags.json ? JSON.stringify(result, null, 2) + '\n' : renderAllreduce(result));
      const failed = result.flagged.length > 0 || result.wrong > 0 || result.message !== null;
      process.exitCode = failed ? SWEEP_FAILED : ExitCode.Ok;
    });
}

async function runSweep(flags: AllreduceFlags): Promise<AllreduceCheckResult> {
  const body: AllreduceCheckRequest = {
    placement: placementSpecFromOptions(flags),
    ...(flags.minBytes !== undefined ? { minBytes: flags.minBytes } : {}),
    ...(flags.maxBytes !== undefined ? { maxBytes: flags.maxBytes } : {}),
    ...(flags.iterations !== undefined ? { iterations: flags.iterations } : {}),
    ...(flags.timeout !== undefined ? { timeout: Math.ceil(flags.timeout) } : {}),
  };
  const waitMs = (flags.timeout ?? ALLREDUCE_TIMEOUT_S.max) * 1000 + ANSWER_MARGIN_MS;
  return call(loadClientConfig(), 'POST /v1/checks/allreduce', { body, timeoutMs: waitMs });
}

async function lastSweep(flags: AllreduceFlags): Promise<AllreduceCheckResult> {
  const given = Object.keys(flags).filter((k) => k !== 'last' && k !== 'json');
  if (given.length > 0)
    throw new CliError('--last prints the stored sweep: it takes no placement, size or --timeout flag', ExitCode.Usage);
  const config = loadClientConfig();
  const { checks } = await call(config, 'GET /v1/checks', { query: { kind: 'allreduce', limit: 1 } });
  if (checks.length === 0)
    throw new CliError('no allreduce check is stored yet: run `rankd check allreduce`', ExitCode.RemoteFailure);
  const stored = await call(config, 'GET /v1/checks/:id', { params: { id: checks[0]!.id } });
  if (stored.kind !== 'allreduce')
    throw new CliError(`check ${stored.id} is not an allreduce check`, ExitCode.Software);
  return stored;
}
