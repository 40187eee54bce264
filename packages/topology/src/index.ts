// The agent's hardware facts, read from sysfs/procfs under a root directory: "/" for
// the live system, or a captured/generated tree (hwloc's HWLOC_FSROOT idea).
//
// readFacts is synchronous on purpose: a snapshot is a few hundred tiny sysfs reads,
// and sync reads through one buffer beat the promise machinery by a wide margin. It
// never throws for what it reads; what it cannot know is null plus a warning.
import type { Core, Facts, Nic, NumaNode, RdmaDevice } from '@rankd/protocol';
import { readAllowed } from './cgroup.js';
import { readMemoryLimits, type MemoryLimits } from './cgroup-memory.js';
import { readCaches } from './caches.js';
import { readCpuIdentity } from './cpuinfo.js';
import { readCpuKinds } from './cpu-kinds.js';
import { readCpuTopology, type CpuTopology } from './cpu.js';
import { readFabric } from './fabric.js';
import { readGpus, type GpuVisibilityInput } from './gpus.js';
import { readHost } from './host.js';
import { readHugePages, readMemory } from './memory.js';
import { readNics } from './nics.js';
import { readNuma, type NumaTopology } from './numa.js';
import { readRdma, readVerbsAbi } from './rdma.js';
import { FactsWarningCode, Sysfs } from './sysfs.js';
import { topologyCounts } from './topology.js';

export { factsHash } from './hash.js';
export { renderFacts, toolFailure, FACTS_FORMATS, type FactsFormat, type ToolFailure } from './format/index.js';
export { FactsWarningCode } from './sysfs.js';
export { gpuVisibilityFromEnv, type GpuVisibilityInput } from './gpus.js';

export interface ReadFactsOptions {
  /** Filesystem root to read under; default "/". */
  root?: string;
  /** Read live-only data (IP addresses, os.hostname fallback); default root === "/". */
  live?: boolean;
  /**
   * The GPU lists the reading process was started with (gpuVisibilityFromEnv): GPUs they
   * leave out are kept in the facts with allowed: false. Default: no restriction.
   */
  gpuVisibility?: GpuVisibilityInput;
}

export function readFacts(options: ReadFactsOptions = {}): Facts {
  // Missing files are expected by the dozen (per-CPU `online`, absent cache ids) and each
  // costs an exception; without stack capture an exception is several times cheaper.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return snapshot(options);
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

function snapshot(options: ReadFactsOptions): Facts {
  const root = options.root ?? '/';
  const live = options.live ?? root === '/';
  const sys = new Sysfs(root);

  const identity = readCpuIdentity(sys);
  const topo = readCpuTopology(sys, identity);
  const hugepages = readHugePages(sys);
  const memory = { ...readMemory(sys, hugepages), ...memoryLimitFields(readMemoryLimits(sys)) };
  const numa = withNodes(sys, readNuma(sys, { sizes: hugepages }), topo, memory.totalKb);
  const allowedSets = readAllowed(sys);
  const counts = topologyCounts(topo, numa, allowedSets);

  const nodeOfCpu = new Map<number, number>();
  for (const node of numa.nodes)
    if (!node.gpuMemory) for (const c of node.cpus) if (!nodeOfCpu.has(c)) nodeOfCpu.set(c, node.id);
  const allowedCpus = allowedSets.cpus ? topo.pus.filter((c) => allowedSets.cpus!.includes(c)) : topo.pus;
  const nodeIds = numa.nodes.map((n) => n.id);

  const rdma = readRdma(sys);
  const nics = linkNics(readNics(sys, { live }), rdma);

  return {
    schemaVersion: 1,
    collectedAt: new Date().toISOString(),
    root,
    host: readHost(sys, live),
    cpu: {
      packages: counts.allowed.packages,
      cores: counts.allowed.cores,
      pus: counts.allowed.pus,
      hardware: counts.hardware,
      model: identity.modelName,
      online: topo.online,
      offline: topo.offline,
      allowed: allowedCpus,
      cpusetCgroup: allowedSets.source,
      coreList: coreList(topo, nodeOfCpu),
      numaNodes: counts.allowed.numaNodes,
      puList: topo.puList.map((p) => ({
        cpu: p.cpu,
        package: p.package,
        coreId: p.coreId,
        numaNode: nodeOfCpu.get(p.cpu) ?? -1,
        threadSiblings: p.threadSiblings,
        packageCpus: p.packageCpus,
      })),
      offlinePus: topo.offlinePus,
      legacySiblings: topo.legacySiblings,
      kernelLists: topo.kernelLists,
      kinds: readCpuKinds(sys),
      caches: readCaches(
        sys,
        [...topo.online, ...topo.offline].sort((a, b) => a - b),
      ),
    },
    numa: {
      nodes: numa.nodes,
      distances: numa.distances,
      allowed: allowedSets.mems ? nodeIds.filter((id) => allowedSets.mems!.includes(id)) : nodeIds,
      assumed: !numa.present,
    },
    memory,
    nics,
    rdma: { devices: rdma, verbsAbi: readVerbsAbi(sys) },
    ...readGpus(sys, options.gpuVisibility),
    fabric: readFabric(sys),
    warnings: sys.warnings,
  };
}

/** The limits as MemoryFacts fields: one that could not be known is left out (a warning says why). */
function memoryLimitFields(
  limits: MemoryLimits,
): Pick<Facts['memory'], 'cgroupLimitKb' | 'cgroupHighKb' | 'cgroupPath'> {
  return {
    ...(limits.limitKb === undefined ? {} : { cgroupLimitKb: limits.limitKb }),
    ...(limits.highKb === undefined ? {} : { cgroupHighKb: limits.highKb }),
    cgroupPath: limits.path,
  };
}

/** Physical cores ordered by (package, first PU), each with its package and NUMA node. */
function coreList(topo: CpuTopology, nodeOfCpu: Map<number, number>): Core[] {
  const pkgOf = new Map(topo.puList.map((p) => [p.cpu, p.package]));
  return topo.cores
    .map((core) => ({
      package: pkgOf.get(core.cpus[0]!) ?? -1,
      coreId: core.id,
      numaNode: nodeOfCpu.get(core.cpus[0]!) ?? -1,
      pus: core.cpus,
    }))
    .sort((a, b) => a.package - b.package || a.pus[0]! - b.pus[0]!);
}

/**
 * A kernel without NUMA (no node folder) still has one memory domain; libnuma and hwloc
 * both present it as node 0 holding every CPU, and so do the facts.
 */
function withNodes(sys: Sysfs, numa: NumaTopology, topo: CpuTopology, memTotalKb: number | null): NumaTopology {
  if (numa.present) return numa;
  sys.warn(
    FactsWarningCode.Inferred,
    'no NUMA information in sysfs; one node 0 holding every CPU assumed',
    '/sys/devices/system/node',
  );
  const node: NumaNode = {
    id: 0,
    cpus: topo.pus,
    memTotalKb,
    memFreeKb: null,
    cpuless: topo.pus.length === 0,
    hugepages: [],
  };
  return { present: false, nodes: [node], distances: [[10]], initiators: new Map() };
}

/** A netdev belongs to an RDMA device when a port names it, or when they share a PCI function. */
function linkNics(nics: Nic[], devices: RdmaDevice[]): Nic[] {
  const byNetdev = new Map<string, string>();
  for (const d of devices)
    for (const p of d.ports) if (p.netdev && !byNetdev.has(p.netdev)) byNetdev.set(p.netdev, d.name);
  for (const d of devices)
    for (const p of d.ports)
      for (const g of p.gids) if (g.netdev && !byNetdev.has(g.netdev)) byNetdev.set(g.netdev, d.name);
  return nics.map((nic) => {
    const byPci = nic.pciAddress ? devices.find((d) => d.pciAddress === nic.pciAddress)?.name : undefined;
    return { ...nic, rdmaDevice: byNetdev.get(nic.name) ?? byPci ?? null };
  });
}
