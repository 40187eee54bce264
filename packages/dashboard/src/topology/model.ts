// lstopo's picture as data: packages hold NUMA nodes, NUMA nodes hold cores and the PCI
// devices attached to them (RDMA HCAs with their ports, network interfaces, GPUs), cores hold
// hardware threads (PUs). Built from an agent's facts as they come; nothing is guessed:
// a device whose NUMA node is unknown is drawn on the machine, outside every NUMA node.
import type { Facts } from '../api/client';

type RdmaDevice = Facts['rdma']['devices'][number];
type Nic = Facts['nics'][number];
type Gpu = Facts['gpus'][number];

export interface Devices {
  rdma: RdmaDevice[];
  /** Physical interfaces that are not an RDMA device's netdev (those are drawn with it). */
  nics: Nic[];
  gpus: Gpu[];
}

export interface CoreBox {
  coreId: number;
  pus: number[];
}

export interface NumaBox {
  /** -1: cores whose NUMA node the kernel does not give. */
  id: number;
  memTotalKb: number | null;
  cores: CoreBox[];
  devices: Devices;
}

export interface PackageBox {
  id: number;
  numa: NumaBox[];
}

export interface MachineBox {
  packages: PackageBox[];
  /** Memory-only NUMA nodes (CXL, HBM): no cores, drawn beside the packages. */
  cpuless: { id: number; memTotalKb: number | null }[];
  /** Devices with no known NUMA node. */
  devices: Devices;
  allowed: ReadonlySet<number>;
}

const noDevices = (): Devices => ({ rdma: [], nics: [], gpus: [] });

export function machineBox(facts: Facts): MachineBox {
  const numaMem = new Map(facts.numa.nodes.map((n) => [n.id, n.memTotalKb]));
  const packages = new Map<number, Map<number, NumaBox>>();
  for (const core of facts.cpu.coreList) {
    const byNuma = packages.get(core.package) ?? new Map<number, NumaBox>();
    packages.set(core.package, byNuma);
    const numa = byNuma.get(core.numaNode) ?? {
      id: core.numaNode,
      memTotalKb: numaMem.get(core.numaNode) ?? null,
      cores: [],
      devices: noDevices(),
    };
    byNuma.set(core.numaNode, numa);
    numa.cores.push({ coreId: core.coreId, pus: core.pus });
  }
  const boxes: PackageBox[] = [...packages.entries()]
    .sort(([a], [b]) => a - b)
    .map(([id, byNuma]) => ({ id, numa: [...byNuma.values()].sort((a, b) => a.id - b.id) }));
  // a NUMA node split over packages gets its devices once, in the first package holding it
  const numaHome = new Map<number, NumaBox>();
  for (const p of boxes) for (const n of p.numa) if (n.id >= 0 && !numaHome.has(n.id)) numaHome.set(n.id, n);
  const machineDevices = noDevices();
  const home = (numa: number | null): Devices => (numa !== null && numaHome.get(numa)?.devices) || machineDevices;
  const rdmaNetdevs = new Set<string>();
  for (const d of facts.rdma.devices) {
    home(d.numaNode).rdma.push(d);
    for (const p of d.ports) if (p.netdev) rdmaNetdevs.add(p.netdev);
  }
  for (const nic of facts.nics)
    if (!nic.virtual && !rdmaNetdevs.has(nic.name) && !nic.rdmaDevice) home(nic.numaNode).nics.push(nic);
  for (const gpu of facts.gpus) home(gpu.numaNode).gpus.push(gpu);
  return {
    packages: boxes,
    cpuless: facts.numa.nodes
      .filter((n) => n.cpuless && !n.gpuMemory)
      .map((n) => ({ id: n.id, memTotalKb: n.memTotalKb })),
    devices: machineDevices,
    allowed: new Set(facts.cpu.allowed),
  };
}

export function formatKb(kb: number | null): string {
  if (kb === null) return '?';
  const gib = kb / 1024 / 1024;
  return gib >= 1 ? `${gib.toFixed(gib >= 10 ? 0 : 1)} GiB` : `${Math.round(kb / 1024)} MiB`;
}
