// The numbering of a machine description: which CPU is which thread of which core of
// which package, and which NUMA node each core belongs to. Pure; the writers use it.
import type { MachineSpec } from './spec.js';

export interface CpuPlace {
  cpu: number;
  pkg: number;
  /** core_id: the core's index inside its package, as Intel and AMD number it. */
  core: number;
  thread: number;
  node: number | null;
}

export interface Layout {
  total: number;
  cpus: CpuPlace[];
  /** CPU nodes (count = packages × numaPerPackage), then CPU-less ones. */
  nodeCount: number;
  cpuNodeCount: number;
  /** siblings[cpu] = the online threads of its core. */
  siblingsOf(cpu: number): number[];
  packageCpusOf(cpu: number): number[];
  nodeCpus(node: number): number[];
  online: number[];
  offline: number[];
}

export function layout(m: MachineSpec): Layout {
  const P = m.packages;
  const C = m.coresPerPackage;
  const T = m.threadsPerCore;
  const nps = m.numaPerPackage ?? 1;
  const total = P * C * T;
  const cpus: CpuPlace[] = [];
  for (let p = 0; p < P; p++) {
    for (let c = 0; c < C; c++) {
      for (let t = 0; t < T; t++) {
        const cpu = (m.numbering ?? 'split') === 'split' ? t * P * C + p * C + c : (p * C + c) * T + t;
        const node = nps === 0 ? null : p * nps + Math.floor((c * nps) / C);
        cpus.push({ cpu, pkg: p, core: c, thread: t, node });
      }
    }
  }
  cpus.sort((a, b) => a.cpu - b.cpu);
  const offline = new Set(m.offline ?? []);
  const online = cpus.map((c) => c.cpu).filter((c) => !offline.has(c));
  const byCpu = new Map(cpus.map((c) => [c.cpu, c]));
  const cpuNodeCount = nps === 0 ? 0 : P * nps;
  return {
    total,
    cpus,
    nodeCount: cpuNodeCount + (m.cpulessNodes?.length ?? 0),
    cpuNodeCount,
    online,
    offline: [...offline].sort((a, b) => a - b),
    siblingsOf(cpu) {
      const me = byCpu.get(cpu)!;
      return cpus.filter((c) => c.pkg === me.pkg && c.core === me.core && !offline.has(c.cpu)).map((c) => c.cpu);
    },
    packageCpusOf(cpu) {
      const me = byCpu.get(cpu)!;
      return cpus.filter((c) => c.pkg === me.pkg && !offline.has(c.cpu)).map((c) => c.cpu);
    },
    nodeCpus(node) {
      return cpus.filter((c) => c.node === node && !offline.has(c.cpu)).map((c) => c.cpu);
    },
  };
}

/** 10 on the diagonal, 12 within a package, 21 across packages, 31 to and from CPU-less nodes. */
export function defaultDistances(m: MachineSpec, l: Layout): number[][] {
  const nps = m.numaPerPackage ?? 1;
  const rows: number[][] = [];
  for (let i = 0; i < l.nodeCount; i++) {
    const row: number[] = [];
    for (let j = 0; j < l.nodeCount; j++) {
      if (i === j) row.push(10);
      else if (i >= l.cpuNodeCount || j >= l.cpuNodeCount) row.push(31);
      else row.push(Math.floor(i / nps) === Math.floor(j / nps) ? 12 : 21);
    }
    rows.push(row);
  }
  return rows;
}
