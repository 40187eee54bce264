// `mpiexec.hydra` for Intel MPI, as seed 002's runbook writes it by hand: I_MPI_PIN_DOMAIN's
// mask list pins local rank i to mask i, what every rank shares goes in as -genv, and the
// hosts with their rank counts come from the machinefile view.
//
// - A rank's domain is its compute CPUs and its comm-worker CPUs: oneCCL's workers are
//   threads of the rank's process, so they run inside its affinity (the rankfile view gives
//   a rank the same set). Seed 002's masks leave the worker cores out; its test
//   (test/planner/seed002-no-ht.test.ts) shows what its masks are and why these differ.
// - What differs between ranks (RANK, LOCAL_RANK, …) cannot be -genv'd: a `#` line names it.
//   Hydra gives each rank PMI_RANK, PMI_SIZE, MPI_LOCALRANKID and MPI_LOCALNRANKS, which the
//   program derives them from (seed 002's sets RANK from PMI_RANK); rankd's copies of these
//   (--env-profile mpi) are left to hydra.
// - The plan's CCL_PROCESS_LAUNCHER=none makes oneCCL read its local rank from
//   CCL_LOCAL_RANK, which differs per rank; under hydra it is `hydra`, which reads
//   MPI_LOCALRANKID (and so the local rank that picks the rank's mask and its slice of
//   CCL_WORKER_AFFINITY).
// - Nodes whose mask lists differ (heterogeneous nodes) cannot share one -genv. Separate
//   commands per kind of node would start separate MPI jobs, each numbering from rank 0, so
//   the one command gets an argument set (`:`) per run of alike nodes, each with its own
//   -env. Hydra lays argument sets over the machinefile's slots in order, so each set lands
//   on its nodes only with this plan's machinefile and no -ppn.
//
// Hydra's parsing as MPICH 4.0's (Intel MPI's derives from it) does it, checked by running
// it: `-genv K=V` splits at the first "=" (a value may hold "=" or be empty); "--" is an
// unrecognized argument, so there is none: the program is the first word without a "-".
import { formatCpuMask } from '@rankd/protocol/cpuset';
import type { RankEntry, RankMap } from '@rankd/protocol';
import { shellQuote } from './env.js';
import { hydraOrder } from './machinefile.js';

/** Stands where the user's program goes; pasted as is, the shell refuses it. */
export const IMPI_COMMAND_PLACEHOLDER = '<command>';

const PIN_DOMAIN = 'I_MPI_PIN_DOMAIN';
/** Set by hydra for every rank. */
const HYDRA_SETS = ['PMI_RANK', 'PMI_SIZE', 'MPI_LOCALRANKID', 'MPI_LOCALNRANKS'];
/** What oneCCL reads with CCL_PROCESS_LAUNCHER=none, and hydra's launcher mode replaces. */
const CCL_NONE_LAUNCHER = ['CCL_PROCESS_LAUNCHER', 'CCL_LOCAL_RANK', 'CCL_LOCAL_SIZE'];
const INDENT = '    ';

/** The ranks of consecutive nodes with one mask list: one -genv, or one argument set. */
interface AlikeNodes {
  ranks: RankEntry[];
  pinDomain: string;
}

export function renderImpi(map: RankMap): string {
  const sets = alikeNodeRuns(map);
  const perSet = sets.length > 1;
  const userPin = map.ranks.some((r) => PIN_DOMAIN in r.env);
  const hydraLauncher = map.ranks.every((r) => r.env['CCL_PROCESS_LAUNCHER'] === 'none');
  const env = splitEnv(map, sets, new Set([...HYDRA_SETS, ...(hydraLauncher ? CCL_NONE_LAUNCHER : [])]));
  const global: [string, string][] = [];
  if (!userPin && !perSet) global.push([PIN_DOMAIN, sets[0]!.pinDomain]);
  if (hydraLauncher) global.push(['CCL_PROCESS_LAUNCHER', 'hydra']);
  global.push(...env.global);
  const order = hydraOrder(map);
  // argument sets always fill node by node; one set can also deal round robin (-ppn 1)
  const numberedAsPlanned = perSet ? order === 'block' : order !== null;

  const comments = [
    "# Intel MPI's mpiexec.hydra: I_MPI_PIN_DOMAIN pins local rank i to mask i, its compute and comm-worker CPUs",
  ];
  comments.push('# ./machinefile is `rankd plan --format machinefile` with the same placement flags');
  if (perSet) {
    comments.push(
      "# the nodes' domains differ, and one -genv cannot say that: one argument set per run of alike nodes, with its own -env;" +
        " sets take the machinefile's slots in order, so use this plan's machinefile and no -ppn",
    );
    const counts = [...new Set(map.nodes.map((n) => n.ranks.length))].sort((a, b) => a - b);
    if (counts.length > 1)
      comments.push(
        `# ranks per node differ (${counts.join(', ')}): -ppn cannot say that, the machinefile's counts do`,
      );
  } else if (order === 'round-robin') {
    comments.push('# -ppn 1: hydra deals ranks one per node in turn, as the plan does');
  }
  if (!numberedAsPlanned) {
    comments.push(
      '# hydra numbers ranks node by node; the plan numbers them otherwise, so global ranks differ from it (each node keeps its count and domains)',
    );
  }
  if (userPin) comments.push(`# ${PIN_DOMAIN} is the one --env gave, not the plan's masks`);
  if (hydraLauncher) {
    comments.push(
      "# CCL_PROCESS_LAUNCHER=hydra, not the plan's none: oneCCL then reads its local rank from MPI_LOCALRANKID, not CCL_LOCAL_RANK and CCL_LOCAL_SIZE",
    );
  }
  if (env.differing.length > 0) {
    comments.push(
      `# not -genv'd, they differ between ranks: ${env.differing.join(' ')};` +
        ` hydra sets ${HYDRA_SETS.join(', ')} for each rank to derive them from (--format env shows each rank's values)`,
    );
  }
  comments.push("# MPICH's hydra ignores I_MPI_PIN_DOMAIN (it pins with -bind-to)");
  for (const note of map.notes) comments.push(`# note: ${note}`);

  const head = ['mpiexec.hydra', '-machinefile', 'machinefile'];
  if (!perSet) {
    head.push('-np', String(map.worldSize));
    // one mask list means one count per node
    if (order === 'block') head.push('-ppn', String(map.nodes[0]!.ranks.length));
    if (order === 'round-robin') head.push('-ppn', '1');
  }
  head.push('-l');
  const args = [head.join(' '), ...global.map(([k, v]) => `${INDENT}-genv ${k}=${shellQuote(v)}`)];
  if (!perSet) args.push(INDENT + IMPI_COMMAND_PLACEHOLDER);
  for (const [i, set] of perSet ? sets.entries() : []) {
    args.push(`${INDENT}-n ${set.ranks.length}`);
    const local: [string, string][] = userPin ? [] : [[PIN_DOMAIN, set.pinDomain]];
    for (const key of env.perSet) {
      // a kind of node without the variable (no RDMA device: no CCL_MNIC) leaves it out
      const value = set.ranks[0]!.env[key];
      if (value !== undefined) local.push([key, value]);
    }
    for (const [k, v] of local) args.push(`${INDENT}${INDENT}-env ${k}=${shellQuote(v)}`);
    args.push(`${INDENT}${INDENT}${IMPI_COMMAND_PLACEHOLDER}${i < sets.length - 1 ? ' :' : ''}`);
  }
  return comments.join('\n') + '\n' + args.join(' \\\n') + '\n';
}

/** The map's nodes in order, consecutive ones with the same mask list together. */
function alikeNodeRuns(map: RankMap): AlikeNodes[] {
  const byRank = new Map(map.ranks.map((r) => [r.rank, r]));
  const runs: AlikeNodes[] = [];
  for (const node of map.nodes) {
    const ranks = node.ranks.map((r) => byRank.get(r)!);
    const pinDomain = `[${domainMasks(ranks).join(',')}]`;
    const last = runs.at(-1);
    if (last && last.pinDomain === pinDomain) last.ranks.push(...ranks);
    else runs.push({ ranks, pinDomain });
  }
  return runs;
}

/**
 * Which variables every rank shares (-genv), which every argument set shares within itself
 * or lacks altogether (-env, only with several sets), and which differ between ranks.
 */
function splitEnv(
  map: RankMap,
  sets: readonly AlikeNodes[],
  skip: ReadonlySet<string>,
): { global: [string, string][]; perSet: string[]; differing: string[] } {
  const out = { global: [] as [string, string][], perSet: [] as string[], differing: [] as string[] };
  const keys = new Set<string>();
  for (const r of map.ranks) for (const k of Object.keys(r.env)) keys.add(k);
  for (const key of keys) {
    if (skip.has(key)) continue;
    const value = sharedValue(map.ranks, key);
    if (value !== undefined) out.global.push([key, value]);
    else if (
      sets.length > 1 &&
      sets.every((s) => sharedValue(s.ranks, key) !== undefined || s.ranks.every((r) => !(key in r.env)))
    )
      out.perSet.push(key);
    else out.differing.push(key);
  }
  return out;
}

/**
 * Each rank's domain as a hex mask, all zero-padded to the widest, upper case after the
 * 0x: the form seed 002 writes (`[0x0000000FFFFFF0,0xFFFFFF00000000]`).
 */
export function domainMasks(ranks: readonly RankEntry[]): string[] {
  const hex = ranks.map((r) =>
    formatCpuMask([...r.cpus, ...r.commCpus])
      .slice(2)
      .toUpperCase(),
  );
  const width = Math.max(...hex.map((h) => h.length));
  return hex.map((h) => '0x' + h.padStart(width, '0'));
}

/** The value every rank has for `key`, or undefined when one lacks it or they differ. */
function sharedValue(ranks: readonly RankEntry[], key: string): string | undefined {
  const first = ranks[0]?.env[key];
  if (first === undefined) return undefined;
  return ranks.every((r) => r.env[key] === first) ? first : undefined;
}
