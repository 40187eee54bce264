// Machine presets for the planner's golden tests: the machines of the seed runbooks
// (shared/seeds/000…004) and the topologies the issue names, as fixture-builder specs.
// Each preset takes a host number so that a cluster of them has distinct addresses
// (GIDs carry the IPv4 address of their netdev).
import type { GidSpec, MachineSpec, RdmaPortSpec } from './sysfs-fixture.js';

/** The IPv4-mapped GID of a.b.c.d. */
export function ipv4Gid(address: string): string {
  const [a, b, c, d] = address.split('.').map(Number) as [number, number, number, number];
  const hex = (n: number) => n.toString(16).padStart(2, '0');
  return `0000:0000:0000:0000:0000:ffff:${hex(a)}${hex(b)}:${hex(c)}${hex(d)}`;
}

const linkLocal = (host: number, nic: number) =>
  `fe80:0000:0000:0000:0200:00ff:fe${(host & 0xff).toString(16).padStart(2, '0')}:${(0x100 + nic).toString(16).padStart(4, '0')}`;

/** The usual RoCE table: link-local v1/v2 at 0/1, IPv4 v1/v2 at 2/3. */
function roceTable(netdev: string, address: string, host: number, nic: number): GidSpec[] {
  return [
    { gid: linkLocal(host, nic), type: 'IB/RoCE v1', netdev },
    { gid: linkLocal(host, nic), type: 'RoCE v2', netdev },
    { gid: ipv4Gid(address), type: 'IB/RoCE v1', netdev },
    { gid: ipv4Gid(address), type: 'RoCE v2', netdev },
  ];
}

function rocePort(netdev: string, address: string, host: number, nic: number): RdmaPortSpec {
  return { linkLayer: 'Ethernet', rate: '100 Gb/sec (4X EDR)', gids: roceTable(netdev, address, host, nic) };
}

const guid = (host: number, dev: number) =>
  `0c42a1030000${host.toString(16).padStart(2, '0')}${dev.toString(16).padStart(2, '0')}`;

/**
 * Seed 000: Sapphire Rapids, 2 × 56 cores, siblings numbered i and i+112, one NUMA node
 * per socket, four E810 ("CVL") ports with irdma in RoCE mode, two per socket.
 */
export function seed000Spr(host = 1): MachineSpec {
  const nics = [
    { name: 'cvl01tf2', pci: '0000:38:00.0', numa: 0 },
    { name: 'cvl02tf2', pci: '0000:38:00.1', numa: 0 },
    { name: 'cvl11tf2', pci: '0000:b1:00.0', numa: 1 },
    { name: 'cvl12tf2', pci: '0000:b1:00.1', numa: 1 },
  ];
  return {
    packages: 2,
    coresPerPackage: 56,
    threadsPerCore: 2,
    numbering: 'split',
    cpu: { modelName: 'Intel(R) Xeon(R) Platinum 8480+' },
    host: { hostname: `spr${host}` },
    nics: [
      { name: 'eno1', pci: '0000:17:00.0', numaNode: 0, speedMbps: 1000 },
      ...nics.map((n) => ({ name: n.name, pci: n.pci, numaNode: n.numa, speedMbps: 100000 })),
    ],
    rdma: nics.map((n, i) => ({
      name: `irdma-${n.name}`,
      pci: n.pci,
      auxDevice: `ice.roce.${i}`,
      nodeGuid: guid(host, i),
      pciVendor: '0x8086',
      pciDevice: '0x1592',
      ports: [rocePort(n.name, `10.0.${i}.${host}`, host, i)],
    })),
  };
}

/** Seed 001: a 96-vCPU EMR cloud VM, siblings adjacent (2k, 2k+1), one NUMA node, eRDMA on eth0. */
export function seed001CloudVm(host = 1): MachineSpec {
  return {
    packages: 1,
    coresPerPackage: 48,
    threadsPerCore: 2,
    numbering: 'adjacent',
    cpu: { modelName: 'INTEL(R) XEON(R) PLATINUM 8575C' },
    host: { hostname: `xftest0${host}` },
    // VMs rarely expose PCI locality: numa_node reads -1
    nics: [{ name: 'eth0', pci: '0000:00:05.0', numaNode: -1, speedMbps: 64000 }],
    rdma: [
      {
        name: 'erdma_0',
        pci: '0000:00:05.0',
        nodeType: 'RNIC',
        nodeGuid: guid(host, 0),
        pciVendor: '0x1ded',
        pciDevice: '0x107f',
        // iWARP: one GID, derived from the MAC, that no RoCE rule applies to
        ports: [
          {
            linkLayer: 'Ethernet',
            rate: '25 Gb/sec (1X EDR)',
            gids: [
              { gid: `0016:3e00:00${host.toString(16).padStart(2, '0')}:0000:0000:0000:0000:0000`, netdev: 'eth0' },
            ],
          },
        ],
      },
    ],
  };
}

/** Seed 002: 2 × 28 cores without hyperthreads, no RDMA. */
export function seed002NoHt(host = 1): MachineSpec {
  return {
    packages: 2,
    coresPerPackage: 28,
    threadsPerCore: 1,
    cpu: { modelName: 'Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz' },
    host: { hostname: `clx${host}` },
    nics: [{ name: 'eth0', pci: '0000:18:00.0', numaNode: 0, speedMbps: 25000 }],
  };
}

/**
 * An 8-GPU EPYC node in NPS4 (2 × 64 cores, 8 NUMA nodes): GPUs and InfiniBand HCAs in
 * pairs under shared switches, two pairs on each of NUMA nodes 3, 1, 7 and 5.
 */
export function epycNps4Gpu8(host = 1): MachineSpec {
  // [gpu bus, hca bus, numa]: the HCA's bus sorts right after its GPU's
  const pairs: [string, string, number][] = [
    ['07', '0c', 3],
    ['0f', '12', 3],
    ['47', '4b', 1],
    ['4e', '54', 1],
    ['87', '8d', 7],
    ['90', '94', 7],
    ['b7', 'ba', 5],
    ['bd', 'cc', 5],
  ];
  return {
    packages: 2,
    coresPerPackage: 64,
    threadsPerCore: 2,
    numaPerPackage: 4,
    cpu: { modelName: 'AMD EPYC 7742 64-Core Processor' },
    host: { hostname: `dgx${host}` },
    nics: [{ name: 'enp226s0', pci: '0000:e2:00.0', numaNode: 6, speedMbps: 100000 }],
    rdma: pairs.map(([, bus, numa], i) => ({
      name: `mlx5_${i}`,
      pci: `0000:${bus}:00.0`,
      numaNode: numa,
      nodeGuid: guid(host, i),
      hcaType: 'MT4123',
      ports: [
        {
          linkLayer: 'InfiniBand',
          rate: '200 Gb/sec (4X HDR)',
          lid: host * 16 + i,
          smLid: 1,
          gids: [{ gid: `fe80:0000:0000:0000:${guid(host, i).replace(/(.{4})(?!$)/g, '$1:')}` }],
        },
      ],
    })),
    gpus: pairs.map(([bus, , numa]) => ({ pci: `0000:${bus}:00.0`, numaNode: numa, model: 'NVIDIA A100-SXM4-80GB' })),
  };
}

/**
 * Seed 004: a RoCE pod on a bonded ConnectX port whose GID table holds IPv6 and IPv4
 * entries, with empty slots between them: the IPv4 RoCE v2 GID sits at index 9, not 3.
 */
export function seed004RocePod(host = 1): MachineSpec {
  const netdev = 'net1';
  const v6 = `fd00:0000:0000:0000:0000:0000:0000:${(0x100 + host).toString(16).padStart(4, '0')}`;
  return {
    packages: 2,
    coresPerPackage: 32,
    threadsPerCore: 2,
    cpu: { modelName: 'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz' },
    host: { hostname: `pod-${host}` },
    nics: [
      { name: 'eth0', pci: null },
      { name: netdev, pci: '0000:4b:00.0', numaNode: 0, speedMbps: 200000 },
    ],
    rdma: [
      {
        name: 'mlx5_bond_0',
        pci: '0000:4b:00.0',
        nodeGuid: guid(host, 0),
        hcaType: 'MT4125',
        ports: [
          {
            linkLayer: 'Ethernet',
            rate: '200 Gb/sec (4X HDR)',
            gids: [
              { gid: linkLocal(host, 0), type: 'IB/RoCE v1', netdev },
              { gid: linkLocal(host, 0), type: 'RoCE v2', netdev },
              null,
              { gid: v6, type: 'IB/RoCE v1', netdev },
              { gid: v6, type: 'RoCE v2', netdev },
              null,
              null,
              null,
              { gid: ipv4Gid(`172.16.${host >> 8}.${host & 255}`), type: 'IB/RoCE v1', netdev },
              { gid: ipv4Gid(`172.16.${host >> 8}.${host & 255}`), type: 'RoCE v2', netdev },
            ],
          },
        ],
      },
    ],
  };
}

/**
 * A cgroup-restricted node: 2 × 16 cores with split siblings (64 CPUs), a cpuset that
 * allows 12 whole cores on socket 0 (4-15 with 36-47), 8 whole cores on socket 1
 * (20-27 with 52-59) and one thread of core 16 (CPU 16 without 48); one RoCE NIC on
 * socket 1 only.
 */
export function cgroupRestricted(host = 1): MachineSpec {
  return {
    packages: 2,
    coresPerPackage: 16,
    threadsPerCore: 2,
    cpu: { modelName: 'Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz' },
    host: { hostname: `shared${host}` },
    cgroup: { version: 2, path: '/kubepods.slice/pod1', cpus: '4-16,20-27,36-47,52-59', mems: '0-1' },
    nics: [{ name: 'ens2f0', pci: '0000:ca:00.0', numaNode: 1, speedMbps: 100000 }],
    rdma: [
      {
        name: 'mlx5_0',
        pci: '0000:ca:00.0',
        nodeGuid: guid(host, 0),
        ports: [rocePort('ens2f0', `10.9.0.${host}`, host, 0)],
      },
    ],
  };
}
