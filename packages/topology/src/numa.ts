// NUMA nodes from /sys/devices/system/node: CPUs, memory, huge pages, distances, and
// which CPU-less nodes are NVIDIA GPU memory.
//
// The node list is `online` when the kernel has it, else the nodeN folders. A node whose
// CPUs repeat or cut across an earlier node's is left out (buggy firmware). A distance
// row lists the distances to the online nodes in online order (not by node id), so row
// j of a machine with nodes 0,2,4 is node 4's; sparse ids need no special case here.
import type { HugePages, NumaNode } from '@rankd/protocol';
import { FactsWarningCode, type Sysfs } from './sysfs.js';
import { plural } from '@rankd/protocol/plural';

const NODE = '/sys/devices/system/node';

export interface NumaTopology {
  /** False when the kernel exposes no NUMA at all (no node folder). */
  present: boolean;
  nodes: NumaNode[];
  /** distances[i][j] between nodes[i] and nodes[j]; empty when unknown. */
  distances: number[][];
  /** access0/initiators of CPU-less nodes (HMAT), by node id. */
  initiators: Map<number, number[]>;
}

/** Global huge page sizes with their machine-wide totals, from memory.ts. */
export interface HugePageSizes {
  sizes: HugePages[];
}

export function readNuma(sys: Sysfs, huge: HugePageSizes): NumaTopology {
  const ids = nodeIds(sys);
  if (ids === null) return { present: false, nodes: [], distances: [], initiators: new Map() };
  const gpuNodes = nvidiaGpuMemoryNodes(sys);
  const nodes: NumaNode[] = [];
  const rows: (number[] | null)[] = [];
  const initiators = new Map<number, number[]>();
  for (const id of ids) {
    const dir = `${NODE}/node${id}`;
    const cpus = sys.mask(`${dir}/cpumap`, { optional: true }) ?? sys.list(`${dir}/cpulist`, { optional: true });
    if (cpus === null) {
      sys.warn(FactsWarningCode.Missing, `node${id} has neither cpumap nor cpulist; node left out, as hwloc does`, dir);
      continue;
    }
    const clash = overlapping(nodes, cpus);
    if (clash !== null) {
      sys.warn(
        FactsWarningCode.Inconsistent,
        `node${id} claims CPUs of node${clash} without nesting; node left out, as hwloc does`,
        `${dir}/cpumap`,
      );
      continue;
    }
    const mem = readNodeMeminfo(sys, `${dir}/meminfo`);
    const node: NumaNode = {
      id,
      cpus,
      memTotalKb: mem.total,
      memFreeKb: mem.free,
      cpuless: cpus.length === 0,
      hugepages: nodeHugePages(sys, dir, huge),
    };
    const gpu = gpuNodes.get(id);
    if (gpu !== undefined) node.gpuMemory = gpu;
    nodes.push(node);
    rows.push(readDistanceRow(sys, `${dir}/distance`, ids.length));
    if (node.cpuless) {
      const init = sys.entries(`${dir}/access0/initiators`, { optional: true });
      if (init)
        initiators.set(
          id,
          init.filter((n) => /^node\d+$/.test(n)).map((n) => Number(n.slice(4))),
        );
    }
  }
  return { present: true, nodes, distances: distanceMatrix(sys, ids, nodes, rows), initiators };
}

function nodeIds(sys: Sysfs): number[] | null {
  const online = sys.list(`${NODE}/online`, { optional: true });
  if (online !== null && online.length > 0) return online;
  const names = sys.entries(NODE, { optional: true });
  if (names === null) return null;
  const ids = names
    .filter((n) => /^node\d+$/.test(n))
    .map((n) => Number(n.slice(4)))
    .sort((a, b) => a - b);
  return ids.length > 0 ? ids : null;
}

/**
 * A CPU belongs to one node on any sane kernel. Buggy firmware gives every node all
 * CPUs (hwloc keeps the first and drops the rest); crafted trees nest nodes to model
 * memory tiers, which hwloc accepts when told to and which is kept here.
 */
function overlapping(previous: readonly NumaNode[], cpus: readonly number[]): number | null {
  if (cpus.length === 0) return null;
  const mine = new Set(cpus);
  for (const p of previous) {
    const shared = p.cpus.filter((c) => mine.has(c)).length;
    if (shared === 0) continue;
    const nested = (shared === cpus.length) !== (shared === p.cpus.length);
    if (!nested) return p.id;
  }
  return null;
}

function readNodeMeminfo(sys: Sysfs, path: string): { total: number | null; free: number | null } {
  const text = sys.text(path);
  if (text === null) return { total: null, free: null };
  const total = /MemTotal:\s*(\d+)/.exec(text);
  const free = /MemFree:\s*(\d+)/.exec(text);
  if (!total) sys.warn(FactsWarningCode.Garbled, 'no MemTotal line', path);
  return { total: total ? Number(total[1]) : null, free: free ? Number(free[1]) : null };
}

function nodeHugePages(sys: Sysfs, dir: string, huge: HugePageSizes): HugePages[] {
  return huge.sizes.map((h) => {
    // a size with no pages machine-wide has none on any node: skip two reads per node
    if (h.total === 0) return { sizeKb: h.sizeKb, total: 0, free: 0 };
    const base = `${dir}/hugepages/hugepages-${h.sizeKb}kB`;
    return {
      sizeKb: h.sizeKb,
      total: sys.int(`${base}/nr_hugepages`, { optional: true }) ?? 0,
      free: sys.int(`${base}/free_hugepages`, { optional: true }) ?? 0,
    };
  });
}

function readDistanceRow(sys: Sysfs, path: string, count: number): number[] | null {
  const text = sys.text(path, { optional: true });
  if (text === null) return null;
  const values = text.split(/\s+/).filter(Boolean);
  if (values.length < count || !values.slice(0, count).every((v) => /^\d+$/.test(v))) {
    sys.warn(FactsWarningCode.Garbled, `expected ${plural(count, 'distance')}, read "${text.slice(0, 80)}"`, path);
    return null;
  }
  return values.slice(0, count).map(Number);
}

/** Rows come in online-node order; keep the columns of the nodes that were kept. */
function distanceMatrix(sys: Sysfs, ids: number[], nodes: NumaNode[], rows: (number[] | null)[]): number[][] {
  if (nodes.length === 0 || rows.some((r) => r === null)) {
    if (nodes.length > 1) sys.warn(FactsWarningCode.Missing, 'NUMA distances unknown', NODE);
    return [];
  }
  const column = new Map(ids.map((id, j) => [id, j]));
  return rows.map((row) => nodes.map((n) => row![column.get(n.id)!]!));
}

/** /proc/driver/nvidia/gpus/<bdf>/numa_status "Node: N" marks N as that GPU's memory. */
function nvidiaGpuMemoryNodes(sys: Sysfs): Map<number, string> {
  const out = new Map<number, string>();
  const gpus = sys.entries('/proc/driver/nvidia/gpus', { optional: true });
  for (const bdf of gpus ?? []) {
    const status = sys.text(`/proc/driver/nvidia/gpus/${bdf}/numa_status`, { optional: true });
    const m = status ? /Node:\s*(-?\d+)/.exec(status) : null;
    if (m && Number(m[1]) >= 0) out.set(Number(m[1]), bdf.toLowerCase());
  }
  return out;
}
