// One node's part of the rank map: its ranks' CPUs (from the shared CPU plan), GPUs,
// NICs with their GIDs, memory nodes and environment.
import type { PlacementSpec, RankEntry, RankMapNode } from '@rankd/protocol';
import type { ShareMode } from './cpu-shares.js';
import { rankEnv } from './env/index.js';
import { nicValues } from './env/nic-values.js';
import type { GidPreference } from './gid.js';
import { allowedGpus, assignGpus, gpuPerRank } from './gpus.js';
import { cpusetNote, gpuLimitNote } from './limit-notes.js';
import { memoryBinding } from './memory.js';
import type { CpuPlanCache } from './node-cpu-plan.js';
import { nodeNics, pickRankNics, requireNicMatch, type NicMode, type NicPick } from './nics.js';
import type { NoteBook } from './notes.js';
import { socketInterface, type Rendezvous } from './rendezvous.js';
import type { NodeTopology } from './topology.js';
import type { PlannerNode } from './index.js';

export interface NodeRanksInput {
  node: PlannerNode;
  topo: NodeTopology;
  nodeRank: number;
  /** Global ranks of this node in local-rank order. */
  globalRanks: readonly number[];
  nodeCount: number;
  worldSize: number;
  rendezvous: Rendezvous;
  spec: PlacementSpec;
  cpuPlans: CpuPlanCache;
  nicMode: NicMode;
  gidPref: GidPreference;
  notes: NoteBook;
}

export interface NodeRanks {
  ranks: RankEntry[];
  node: RankMapNode;
  /** --nic patterns that matched nothing here. */
  unmatched: string[];
}

export function planNodeRanks(input: NodeRanksInput): NodeRanks {
  const { node, topo, nodeRank, spec, notes } = input;
  const count = input.globalRanks.length;
  const facts = node.facts;
  const gpus = allowedGpus(facts);
  const gpuLimit = gpuLimitNote(facts);
  const rankGpus = spec.ranksPerNode === 'gpu' ? gpuPerRank(gpus, count, node.name, gpuLimit) : null;
  const mode: ShareMode =
    spec.ranksPerNode === 'numa' || spec.ranksPerNode === 'socket'
      ? { kind: spec.ranksPerNode }
      : rankGpus
        ? { kind: 'gpu', gpuNuma: rankGpus.map((g) => g.numaNode) }
        : { kind: 'count' };
  const cpuPlan = input.cpuPlans.planFor(topo, count, mode, node.name, cpusetNote(facts));
  for (const note of cpuPlan.notes) notes.add(node.name, note);

  const gpuSets = rankGpus
    ? rankGpus.map((g) => [g])
    : assignGpus(
        gpus,
        spec.gpusPerRank ?? 0,
        cpuPlan.ranks.map((r) => r.numas),
        node.name,
        gpuLimit,
      );
  const nics = nodeNics(facts, input.nicMode, input.gidPref);
  requireNicMatch(nics, facts, node.name);
  for (const pattern of nics.unmatched) notes.add(node.name, `--nic pattern ${pattern} matches no device here`);
  for (const c of nics.candidates) {
    for (const p of c.ports) {
      if (p.linkLayer === 'Ethernet' && p.gidIndex === null && c.roce && input.gidPref.fixedIndex === null) {
        notes.add(node.name, `${p.device}:${p.port} has no usable RoCE GID`);
      }
    }
  }
  const nodeIf = socketInterface(facts, node.address);
  const linkLayers = new Set<string>();
  // ranks on the same NUMA nodes get the same NICs: pick (and note) once per NUMA set
  const picks = new Map<string | number, NicPick>();
  const noNics: NicPick = { nics: [], fallback: null };
  const pickFor = (localRank: number, numas: readonly number[]): NicPick => {
    if (nics.candidates.length === 0) return noNics;
    const gpu = rankGpus?.[localRank];
    const key = gpu ? `gpu${localRank}` : numas.length === 1 ? numas[0]! : numas.join(',');
    let pick = picks.get(key);
    if (pick) return pick;
    const place = gpu
      ? {
          numa: gpu.numaNode,
          pci: gpu.pciAddress,
          ordinal: gpus.filter((g) => g.numaNode === gpu.numaNode).indexOf(gpu),
        }
      : null;
    pick = pickRankNics(nics, topo, numas, place);
    picks.set(key, pick);
    if (pick.fallback) notes.add(node.name, pick.fallback);
    const shared = nicValues(pick.nics).sharedGidIndex;
    const roce = pick.nics.filter((n) => n.linkLayer === 'Ethernet' && n.gidIndex !== null);
    if (roce.length > 1 && shared === null) {
      const which = roce.map((n) => `${n.device}:${n.port}=${n.gidIndex}`).join(',');
      notes.add(
        node.name,
        `RoCE ports used together need different GID indexes (${which}); NCCL_IB_GID_INDEX is left to NCCL`,
      );
    }
    for (const n of pick.nics) if (n.linkLayer !== 'unknown') linkLayers.add(n.linkLayer);
    return pick;
  };

  const ranks = cpuPlan.ranks.map((cpu, localRank): RankEntry => {
    const rank = input.globalRanks[localRank]!;
    const pick = pickFor(localRank, cpu.numas);
    const gpuIndexes = gpuSets[localRank]!.map((g) => g.index);
    const mem = memoryBinding(spec.memBind ?? 'local', cpu.numas, facts.numa.allowed);
    if (mem.note) notes.add(node.name, `local rank ${localRank}: ${mem.note}`);
    const env = rankEnv(
      {
        rank,
        localRank,
        nodeRank,
        worldSize: input.worldSize,
        localWorldSize: count,
        nodeCount: input.nodeCount,
        masterAddr: input.rendezvous.masterAddr,
        masterPort: input.rendezvous.masterPort,
        cpus: cpu.cpus,
        commWorkers: cpu.commCpus.length,
        nodeWorkerAffinity: cpuPlan.workerAffinity,
        nics: pick.nics,
        socketIfname: nodeIf ?? nicValues(pick.nics).firstNetdev,
        gpus: gpuIndexes,
        gpuBind: spec.gpuBind ?? 'none',
      },
      spec.envProfile ?? 'default',
      spec.env,
    );
    // plans are shared between nodes of one topology: hand out copies
    return {
      rank,
      localRank,
      nodeRank,
      node: node.name,
      address: node.address,
      cpus: cpu.cpus.slice(),
      commCpus: cpu.commCpus.slice(),
      memNodes: mem.nodes,
      gpus: gpuIndexes,
      nics: pick.nics.map((n) => ({ ...n })),
      env,
    };
  });
  return {
    ranks,
    node: {
      nodeRank,
      name: node.name,
      address: node.address,
      ranks: [...input.globalRanks],
      linkLayers: [...linkLayers].sort(),
    },
    unmatched: nics.unmatched,
  };
}
