// `rankd facts [NODE]`: hardware facts, read locally (optionally under a captured or
// generated root) or, with NODE, as the controller holds them; printed as JSON, as a
// summary, or as the output of ibv_devices, ibv_devinfo, numactl -H or lscpu -p.
import type { Command } from 'commander';
import type { Facts } from '@rankd/protocol';
import {
  FACTS_FORMATS,
  gpuVisibilityFromEnv,
  readFacts,
  renderFacts,
  toolFailure,
  type FactsFormat,
} from '@rankd/topology';
import { CliError, ExitCode } from '../exit-codes.js';
import { oneOf } from '../options.js';

interface FactsOptions {
  root?: string;
  json?: boolean;
  format?: FactsFormat | 'json';
}

export function register(program: Command): void {
  program
    .command('facts')
    .description("print hardware facts: this machine's, or a node's as the controller holds them")
    .argument('[node]', 'a node name; without it the local machine is read')
    .option('--root <dir>', 'read sysfs/procfs under this directory instead of /')
    .option(
      '--json',
      'print the facts as JSON: with NODE, the REST document of GET /v1/nodes/NODE/facts (as --format json)',
    )
    .option(
      '--format <format>',
      `one of ${FACTS_FORMATS.join(', ')}, json (default summary)`,
      oneOf([...FACTS_FORMATS, 'json'] as const),
    )
    .action(async (node: string | undefined, opts: FactsOptions) => {
      const format = pickFormat(opts);
      if (node !== undefined && opts.root !== undefined) {
        throw new CliError('--root reads a local tree; it cannot be combined with a node name', ExitCode.Usage);
      }
      // locally, the GPUs this shell was granted (a Slurm job's CUDA_VISIBLE_DEVICES) are what it may use
      const gpuVisibility = gpuVisibilityFromEnv(process.env);
      const facts =
        node === undefined
          ? readFacts(opts.root === undefined ? { gpuVisibility } : { root: opts.root, gpuVisibility })
          : await remoteFacts(node);
      // where the real tool finds no device list it prints only an error and fails, and so does its rendering
      const failure = format === 'json' ? null : toolFailure(facts, format);
      if (failure) {
        process.stderr.write(failure.stderr);
        process.exitCode = failure.exitCode;
        return;
      }
      process.stdout.write(format === 'json' ? JSON.stringify(facts, null, 2) + '\n' : renderFacts(facts, format));
    });
}

function pickFormat(opts: FactsOptions): FactsFormat | 'json' {
  if (opts.json && opts.format !== undefined && opts.format !== 'json')
    throw new CliError(`--json and --format ${opts.format} ask for two outputs; give one`, ExitCode.Usage);
  return opts.json ? 'json' : (opts.format ?? 'summary');
}

/** The controller client loads only for remote reads: local reads race lstopo on startup time. */
async function remoteFacts(node: string): Promise<Facts> {
  const [{ loadClientConfig }, { call }] = await Promise.all([
    import('../client/config.js'),
    import('../client/rest.js'),
  ]);
  return call(loadClientConfig(), 'GET /v1/nodes/:name/facts', { params: { name: node } });
}
