// `rankd plan`: the rank map a placement spec gives, without launching anything.
// Offline with --facts-dir (one NODE.json per node, as `rankd facts --json` writes
// it), otherwise asked of the controller, which plans against its ready nodes.
import type { Command } from 'commander';
import type { PlanRequest } from '@rankd/protocol';
import { PRIORITY } from '@rankd/protocol/limits';
import { RANK_MAP_FORMATS, RANK_MAP_FORMAT_GLOSS, renderRankMap, type RankMapFormat } from '@rankd/planner/views';
import { cpuHoldLine } from '@rankd/protocol/cpu-hold';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { printJson } from '../json-output.js';
import { collect, integerIn, oneOf } from '../options.js';
import { addPlacementOptions, placementSpecFromOptions, type PlacementOptions } from '../placement-flags.js';

interface PlanOptions extends PlacementOptions {
  format?: RankMapFormat;
  json?: boolean;
  factsDir?: string;
  address?: string[];
  priority?: number;
  immediate?: boolean;
}

const formatList = RANK_MAP_FORMATS.map((f) =>
  RANK_MAP_FORMAT_GLOSS[f] ? `${f} (${RANK_MAP_FORMAT_GLOSS[f]})` : f,
).join(', ');

export function register(program: Command): void {
  const cmd = program
    .command('plan')
    .description('show the rank map (CPUs, memory, NICs, GIDs, GPUs, environment) a placement spec gives');
  addPlacementOptions(cmd)
    .option(
      '--format <format>',
      `output: ${formatList}; json is the document of POST /v1/plan (default table)`,
      oneOf(RANK_MAP_FORMATS),
    )
    .option('--json', 'print the REST document of POST /v1/plan: the rank map and its "schedule" (as --format json)')
    .option('--facts-dir <dir>', 'plan offline on NODE.json facts files instead of the controller')
    .option('--address <NODE=IP>', 'the address of a node (offline; repeatable)', collect)
    .option(
      '--priority <N>',
      `the priority the job would be submitted with (${PRIORITY.min} to ${PRIORITY.max})`,
      integerIn(PRIORITY),
    )
    .option('--immediate', 'exit 65 if the job would wait in the queue')
    .action(async (opts: PlanOptions) => {
      if (opts.json && opts.format !== undefined && opts.format !== 'json')
        throw new CliError(`--json and --format ${opts.format} ask for two outputs; give one`, ExitCode.Usage);
      const format = opts.json ? 'json' : (opts.format ?? 'table');
      const placement = placementSpecFromOptions(opts);
      if (opts.factsDir === undefined) {
        if (opts.address?.length) throw new CliError('--address only applies with --facts-dir', ExitCode.Usage);
        const body: PlanRequest = { placement, ...(opts.priority === undefined ? {} : { priority: opts.priority }) };
        const answer = await call(loadClientConfig(), 'POST /v1/plan', { body });
        const { schedule, ...map } = answer;
        if (format === 'json') printJson(answer);
        else process.stdout.write(renderRankMap(map, format));
        // on stderr: machine formats on stdout stay what they are
        if (schedule.startsNow)
          process.stderr.write('rankd: a job of this spec would start now, on the CPUs and GPUs above\n');
        else
          process.stderr.write(
            `rankd: a job of this spec would wait: ${schedule.reason}\nrankd: the map above is its plan on the idle cluster; the nodes and CPUs it gets may differ\n`,
          );
        const hold = cpuHoldLine(map, 'would hold');
        if (hold) process.stderr.write(`rankd: it ${hold}\n`);
        if (opts.immediate && !schedule.startsNow) process.exitCode = ExitCode.RemoteFailure;
        return;
      }
      if (opts.priority !== undefined || opts.immediate)
        throw new CliError(
          '--priority and --immediate ask the controller; they do not apply with --facts-dir',
          ExitCode.Usage,
        );
      // the planner and the facts schema only when planning here
      const { planOffline } = await import('../plan-offline.js');
      const { answer, facts } = planOffline(opts.factsDir, opts.address ?? [], placement);
      const { schedule: _idle, ...map } = answer;
      if (format === 'json') printJson(answer);
      else process.stdout.write(renderRankMap(map, format, facts));
      const hold = cpuHoldLine(map, 'would hold');
      if (hold) process.stderr.write(`rankd: a job of this spec ${hold}\n`);
    });
}
