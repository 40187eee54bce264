// The placement flags shared by `rankd plan` and `rankd run`, and their translation
// into a PlacementSpec (the same object the REST job spec carries).
import { Option, type Command } from 'commander';
import type { PlacementSpec, RanksPerNode } from '@rankd/protocol';
import { PLACEMENT, type Bounds } from '@rankd/protocol/limits';
import { CliError, ExitCode } from './exit-codes.js';

export interface PlacementOptions {
  nodes?: string;
  nodelist?: string;
  group?: string;
  ntasks?: string;
  ranksPerNode?: string;
  ppn?: string;
  distribution?: string;
  cpusPerRank?: string;
  oversubscribe?: boolean;
  ht?: string;
  commWorkers?: string;
  commOn?: string;
  memBind?: string;
  nic?: string;
  gpusPerRank?: string;
  gpuBind?: string;
  masterPort?: string;
  env?: string[];
  envProfile?: string;
  exclusive?: boolean;
  share?: boolean;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function addPlacementOptions(cmd: Command): Command {
  return cmd
    .option('-N, --nodes <count>', 'number of nodes (default: every ready node)')
    .option('--nodelist <a,b,c>', 'exactly these nodes, in this order')
    .option('--group <pattern>', 'nodes of an inventory group or pattern')
    .option('-n, --ntasks <total>', 'total number of ranks')
    .option('--ranks-per-node <N|numa|socket|gpu>', 'ranks per node: a count, or one per NUMA node, package or GPU')
    .addOption(new Option('--ppn <N|numa|socket|gpu>', 'alias of --ranks-per-node'))
    .addOption(new Option('--distribution <how>', 'global rank order across nodes').choices(['block', 'cyclic']))
    .option(
      '-c, --cpus-per-rank <C>',
      "compute cores per rank (default: the site's, the controller's --default-cpus-per-rank: the rank's share of its node, or N)",
    )
    .option('--oversubscribe', 'allow more ranks than cores on a node: ranks share cores, each pinned to one')
    .addOption(new Option('--ht <policy>', 'hardware threads per compute core: first or all').choices(['first', 'all']))
    .option('--comm-workers <K>', 'CPUs reserved per rank for communication workers (oneCCL)')
    .addOption(
      new Option('--comm-on <where>', 'workers on sibling threads or on cores of their own').choices([
        'siblings',
        'cores',
      ]),
    )
    .addOption(new Option('--mem-bind <policy>', 'memory binding').choices(['local', 'none']))
    .option('--nic <local|all|none|PATTERN,…>', 'RDMA devices per rank (globs over device names)')
    .option('--gpus-per-rank <G>', 'GPUs per rank')
    .addOption(new Option('--gpu-bind <policy>', 'visible sets CUDA_VISIBLE_DEVICES').choices(['none', 'visible']))
    .option('--master-port <port>', 'rendezvous port (default: chosen)')
    .option('--env <K=V>', 'set or override a variable in every rank (repeatable)', collect)
    .addOption(new Option('--env-profile <profile>', 'mpi adds PMI_/OMPI_/MPI_ variables').choices(['default', 'mpi']))
    .addOption(
      new Option(
        '--exclusive',
        'whole nodes only: hold every CPU and GPU of the nodes, with no other job there',
      ).conflicts('share'),
    )
    .option('--share', 'overlap with other jobs: plan on whole nodes and hold nothing');
}

function usage(message: string): CliError {
  return new CliError(message, ExitCode.Usage);
}

function integer(flag: string, text: string | undefined, { min, max }: Bounds): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text.trim())) throw usage(`${flag} takes a whole number, not "${text}"`);
  const value = Number(text.trim());
  if (value < min || value > max) throw usage(`${flag} must be between ${min} and ${max}, not ${value}`);
  return value;
}

function ranksPerNode(flag: string, text: string | undefined): RanksPerNode | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  if (t === 'numa' || t === 'socket' || t === 'gpu') return t;
  if (!/^\d+$/.test(t)) throw usage(`${flag} takes a count or numa, socket or gpu, not "${text}"`);
  return integer(flag, t, PLACEMENT.ranksPerNode);
}

function list(flag: string, text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw usage(`${flag} is empty`);
  return items;
}

function envPairs(pairs: string[] | undefined): Record<string, string> | undefined {
  if (!pairs || pairs.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if (eq < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw usage(`--env takes NAME=VALUE, not "${pair}"`);
    env[key] = pair.slice(eq + 1);
  }
  return env;
}

/** The spec the flags describe; only the flags given appear in it. */
export function placementSpecFromOptions(opts: PlacementOptions): PlacementSpec {
  const rpn = ranksPerNode('--ranks-per-node', opts.ranksPerNode);
  const ppn = ranksPerNode('--ppn', opts.ppn);
  if (rpn !== undefined && ppn !== undefined && rpn !== ppn) {
    throw usage(`--ranks-per-node ${opts.ranksPerNode} and --ppn ${opts.ppn} disagree (--ppn is an alias)`);
  }
  const nic = opts.nic?.trim();
  if (nic !== undefined && nic === '') throw usage('--nic is empty');
  const spec: PlacementSpec = {
    nodes: integer('-N/--nodes', opts.nodes, PLACEMENT.nodes),
    nodelist: list('--nodelist', opts.nodelist),
    group: opts.group,
    ntasks: integer('-n/--ntasks', opts.ntasks, PLACEMENT.ntasks),
    ranksPerNode: rpn ?? ppn,
    distribution: opts.distribution as PlacementSpec['distribution'],
    cpusPerRank: integer('-c/--cpus-per-rank', opts.cpusPerRank, PLACEMENT.cpusPerRank),
    oversubscribe: opts.oversubscribe || undefined,
    ht: opts.ht as PlacementSpec['ht'],
    commWorkers: integer('--comm-workers', opts.commWorkers, PLACEMENT.commWorkers),
    commOn: opts.commOn as PlacementSpec['commOn'],
    memBind: opts.memBind as PlacementSpec['memBind'],
    nic,
    gpusPerRank: integer('--gpus-per-rank', opts.gpusPerRank, PLACEMENT.gpusPerRank),
    gpuBind: opts.gpuBind as PlacementSpec['gpuBind'],
    masterPort: integer('--master-port', opts.masterPort, PLACEMENT.masterPort),
    env: envPairs(opts.env),
    envProfile: opts.envProfile as PlacementSpec['envProfile'],
    exclusive: opts.exclusive || undefined,
    share: opts.share || undefined,
  };
  if (spec.nodelist && spec.group) throw usage('--nodelist and --group both select nodes; give one');
  for (const key of Object.keys(spec) as (keyof PlacementSpec)[]) if (spec[key] === undefined) delete spec[key];
  return spec;
}
