// The rank planner: the facts of candidate nodes + a placement spec → a rank map.
//
// A pure function: no I/O, no clock, no randomness (the master port picker is
// injected). Impossible specs throw PlanError with a stable code. Work that depends
// only on a node's topology is done once per distinct topology, so planning a large
// homogeneous cluster costs little more than copying the answer per rank.
import {
  PlanErrorCode,
  type CpuDefault,
  type Facts,
  type PlacementSpec,
  type RankEntry,
  type RankMap,
  type RankMapNode,
} from '@rankd/protocol';
import { rankCpuPolicy } from './cpu-default.js';
import { CpuPlanCache } from './node-cpu-plan.js';
import { planNodeRanks } from './node-ranks.js';
import { PlanError } from './errors.js';
import { gidPreferenceFromEnv } from './gid.js';
import { allowedGpus } from './gpus.js';
import { gpuLimitNote } from './limit-notes.js';
import { assignRanks, rankCounts } from './layout.js';
import { parseNicSpec } from './nics.js';
import { NoteBook } from './notes.js';
import { rendezvous, type PortPicker } from './rendezvous.js';
import { selectNodes, type GroupResolver } from './select-nodes.js';
import { topologyOf, type NodeTopology } from './topology.js';

export { PlanError, formatSpecFlags } from './errors.js';
export { chooseGid, DEFAULT_GID_PREFERENCE, type GidChoice, type GidPreference } from './gid.js';
export { nodeNics, type NicCandidate } from './nics.js';
export { allowedGpus } from './gpus.js';
export { globGroupResolver, type GroupResolver } from './select-nodes.js';
export { DEFAULT_MASTER_PORT, type PortPicker } from './rendezvous.js';
export { topologyOf, type NodeTopology } from './topology.js';
export {
  allocationMode,
  allocationOf,
  coresIn,
  coresUsed,
  disjoint,
  type Allocation,
  type AllocationMode,
  type NodeAllocation,
} from './admission/allocation.js';
export { withHolds } from './admission/holds.js';

export interface PlannerNode {
  name: string;
  address: string | null;
  facts: Facts;
}

export interface PlanOptions {
  /** Picks MASTER_PORT when the spec has none (default 29500). */
  pickPort?: PortPicker;
  /** Resolves --group against the inventory (default: globs over node names). */
  resolveGroup?: GroupResolver;
  /** Why a node that is not a candidate cannot take ranks (drained, unreachable), for --nodelist errors. */
  unavailable?: (name: string) => string | null;
  /** CPUs per rank for a spec without -c (cpu-default.ts); default `share`. */
  defaultCpusPerRank?: CpuDefault;
}

export function planRankMap(
  candidates: readonly PlannerNode[],
  spec: PlacementSpec,
  options: PlanOptions = {},
): RankMap {
  checkSpec(spec);
  const { nodes: selected, explicit } = selectNodes(candidates, spec, options.resolveGroup, options.unavailable);
  const topos = selected.map((n) => topologyOf(n.facts));
  const ppn = spec.ranksPerNode;
  const capacity = ppn === undefined ? null : (i: number) => capacityOf(topos[i]!, selected[i]!.facts, ppn);
  const counts = rankCounts(
    selected.map((n) => n.name),
    capacity,
    spec,
    explicit,
    (i) => gpuLimitNote(selected[i]!.facts),
  );
  // nodes left without a rank (an implicit node count larger than -n needs) drop out
  const used = selected.map((node, i) => ({ node, topo: topos[i]!, count: counts[i]! })).filter((u) => u.count > 0);
  const globalRanks = assignRanks(
    used.map((u) => u.count),
    spec.distribution ?? 'block',
  );
  const worldSize = used.reduce((a, u) => a + u.count, 0);
  const notes = new NoteBook();
  const rdv = rendezvous(used[0]!.node, spec.masterPort, options.pickPort);
  if (rdv.note) notes.add(null, rdv.note);

  const cpuPolicy = rankCpuPolicy(spec, options.defaultCpusPerRank ?? 'share');
  const cpuPlans = new CpuPlanCache(spec, cpuPolicy);
  const nicMode = parseNicSpec(spec.nic);
  const gidPref = gidPreferenceFromEnv(spec.env);
  const unmatchedEverywhere = new Set(nicMode.kind === 'local' && nicMode.patterns ? nicMode.patterns : []);
  const ranks: RankEntry[] = new Array(worldSize);
  const mapNodes: RankMapNode[] = [];

  used.forEach(({ node, topo }, nodeRank) => {
    const nodeRanks = inUsersTerms(spec, used.length, () =>
      planNodeRanks({
        node,
        topo,
        nodeRank,
        globalRanks: globalRanks[nodeRank]!,
        nodeCount: used.length,
        worldSize,
        rendezvous: rdv,
        spec,
        cpuPlans,
        nicMode,
        gidPref,
        notes,
      }),
    );
    for (const pattern of [...unmatchedEverywhere])
      if (!nodeRanks.unmatched.includes(pattern)) unmatchedEverywhere.delete(pattern);
    for (const entry of nodeRanks.ranks) ranks[entry.rank] = entry;
    mapNodes.push(nodeRanks.node);
  });

  if (unmatchedEverywhere.size > 0) {
    throw new PlanError(
      PlanErrorCode.NicNoMatch,
      `--nic pattern ${[...unmatchedEverywhere].join(',')} matches no RDMA device on any node`,
    );
  }
  return {
    worldSize,
    masterAddr: rdv.masterAddr,
    masterPort: rdv.masterPort,
    nodes: mapNodes,
    ranks,
    notes: notes.list(),
    cpuPolicy,
  };
}

/**
 * A node takes fewer ranks than -n put there: the planner suggests a count per node, but a
 * user who gave -n alone never typed --ranks-per-node, so the suggestion becomes the -n
 * that fits (the same count on every node of the plan).
 */
function inUsersTerms<T>(spec: PlacementSpec, nodeCount: number, plan: () => T): T {
  try {
    return plan();
  } catch (err) {
    if (!(err instanceof PlanError) || spec.ranksPerNode !== undefined || spec.ntasks === undefined) throw err;
    const { ranksPerNode: perNode, ...rest } = err.suggestion ?? {};
    if (typeof perNode !== 'number') throw err;
    throw err.withSuggestion({ ...rest, ntasks: perNode * nodeCount });
  }
}

function capacityOf(topo: NodeTopology, facts: Facts, ppn: NonNullable<PlacementSpec['ranksPerNode']>): number {
  switch (ppn) {
    case 'numa':
      return topo.numaDomains.length;
    case 'socket':
      return topo.packageDomains.length;
    case 'gpu':
      return allowedGpus(facts).length;
    default:
      return ppn;
  }
}

/** What the schema cannot say about a spec. */
function checkSpec(spec: PlacementSpec): void {
  for (const key of Object.keys(spec.env ?? {})) {
    if (key.startsWith('SLURM_')) {
      throw new PlanError(
        PlanErrorCode.BadSpec,
        `--env ${key}: rankd never exports SLURM_* (programs would believe they run in a Slurm step)`,
      );
    }
  }
  if (spec.ranksPerNode === 'gpu' && spec.gpusPerRank !== undefined && spec.gpusPerRank !== 1) {
    throw new PlanError(
      PlanErrorCode.BadSpec,
      `--ranks-per-node gpu gives each rank one GPU; --gpus-per-rank ${spec.gpusPerRank} contradicts it`,
      {
        suggestion: { gpusPerRank: 1 },
      },
    );
  }
}
