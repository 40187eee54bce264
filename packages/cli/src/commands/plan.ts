// `rankd plan`: the rank map a placement spec gives, without launching anything.
// Offline with --facts-dir (one NODE.json per node, as `rankd facts --json` writes
// it), otherwise asked of the controller, which plans against its ready nodes.
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { Compile } from 'typebox/compile';
import { Facts, type PlacementSpec, type PlanAnswer, type RankMap } from '@rankd/protocol';
import { PlanError, planRankMap, type PlannerNode } from '@rankd/controller/planner/index';
import { RANK_MAP_FORMATS, RANK_MAP_FORMAT_GLOSS, isRankMapFormat, renderRankMap } from '@rankd/controller/planner/views/index';
import { loadClientConfig } from '../client/config.js';
import { request } from '../client/http.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { integer } from '../options.js';
import { addPlacementOptions, placementSpecFromOptions, type PlacementOptions } from '../placement-flags.js';

interface PlanOptions extends PlacementOptions {
  format: string;
  factsDir?: string;
  address?: string[];
  priority?: number;
  immediate?: boolean;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

const formatList = RANK_MAP_FORMATS.map((f) => (RANK_MAP_FORMAT_GLOSS[f] ? `${f} (${RANK_MAP_FORMAT_GLOSS[f]})` : f)).join(', ');

export function register(program: Command): void {
  const cmd = program
    .command('plan')
    .description('show the rank map (CPUs, memory, NICs, GIDs, GPUs, environment) a placement spec gives');
  addPlacementOptions(cmd)
    .option('--format <format>', `output: ${formatList}`, 'table')
    .option('--facts-dir <dir>', 'plan offline on NODE.json facts files instead of the controller')
    .option('--address <NODE=IP>', 'the address of a node (offline; repeatable)', collect)
    .option('--priority <N>', 'the priority the job would be submitted with', integer)
    .option('--immediate', 'exit 65 if the job would wait in the queue')
    .action(async (opts: PlanOptions) => {
      if (!isRankMapFormat(opts.format)) {
        throw new CliError(`--format must be one of ${RANK_MAP_FORMATS.join(', ')}, not "${opts.format}"`, ExitCode.Usage);
      }
      const spec = placementSpecFromOptions(opts);
      if (opts.factsDir === undefined) {
        if (opts.address?.length) throw new CliError('--address only applies with --facts-dir', ExitCode.Usage);
        const { schedule, ...map } = await request<PlanAnswer>(loadClientConfig(), '/v1/plan', {
          method: 'POST',
          body: { ...spec, ...(opts.priority === undefined ? {} : { priority: opts.priority }) },
        });
        process.stdout.write(renderRankMap(map, opts.format));
        // on stderr: machine formats on stdout stay what they are
        if (schedule.startsNow) process.stderr.write('rankd: a job of this spec would start now, on the CPUs and GPUs above\n');
        else process.stderr.write(`rankd: a job of this spec would wait: ${schedule.reason}\nrankd: the map above is its plan on the idle cluster; the nodes and CPUs it gets may differ\n`);
        if (opts.immediate && !schedule.startsNow) process.exitCode = ExitCode.RemoteFailure;
        return;
      }
      if (opts.priority !== undefined || opts.immediate) throw new CliError('--priority and --immediate ask the controller; they do not apply with --facts-dir', ExitCode.Usage);
      const nodes = readFactsDir(opts.factsDir, parseAddresses(opts.address ?? []));
      const map = planOffline(nodes, spec);
      process.stdout.write(renderRankMap(map, opts.format, Object.fromEntries(nodes.map((n) => [n.name, n.facts]))));
    });
}

function planOffline(nodes: PlannerNode[], spec: PlacementSpec): RankMap {
  try {
    return planRankMap(nodes, spec);
  } catch (err) {
    // the same exit code and wording as when the controller refuses the spec
    if (err instanceof PlanError) throw new CliError(`${err.message} (${err.code})`, ExitCode.RemoteFailure);
    throw err;
  }
}

function parseAddresses(pairs: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1) throw new CliError(`--address takes NODE=IP, not "${pair}"`, ExitCode.Usage);
    out.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return out;
}

const checkFacts = Compile(Facts);

function readFactsDir(dir: string, addresses: Map<string, string>): PlannerNode[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  } catch (err) {
    throw new CliError(`cannot read --facts-dir ${dir}: ${(err as Error).message}`, ExitCode.Software);
  }
  if (files.length === 0) throw new CliError(`--facts-dir ${dir} holds no NODE.json file`, ExitCode.Usage);
  const nodes = files.map((file) => {
    const path = join(dir, file);
    let facts: unknown;
    try {
      facts = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new CliError(`cannot read facts ${path}: ${(err as Error).message}`, ExitCode.Software);
    }
    if (!checkFacts.Check(facts)) {
      const first = [...checkFacts.Errors(facts)].slice(0, 3) as { instancePath?: string; message?: string }[];
      const why = first.map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`).join('; ');
      throw new CliError(`${path} is not facts as \`rankd facts --json\` writes them: ${why}`, ExitCode.Usage);
    }
    const name = basename(file, '.json');
    return { name, address: addresses.get(name) ?? liveAddress(facts), facts };
  });
  for (const name of addresses.keys()) {
    if (!nodes.some((n) => n.name === name)) throw new CliError(`--address names ${name}, which has no ${name}.json in ${dir}`, ExitCode.Usage);
  }
  return nodes;
}

/** The first IPv4 address of a physical interface that is up, when the facts were read live. */
function liveAddress(facts: Facts): string | null {
  for (const nic of facts.nics) {
    if (nic.virtual || nic.state !== 'up') continue;
    const v4 = nic.addresses.find((a) => a.family === 'inet');
    if (v4) return v4.address;
  }
  return null;
}
