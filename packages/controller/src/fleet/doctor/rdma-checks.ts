// Doctor checks of one node's RDMA devices: ports up, RoCE v2 GIDs a rank can use,
// and a NIC local to every NUMA node that will host ranks.
import type { DoctorCheck, Facts, RdmaDevice, RdmaPort } from '@rankd/protocol';
import { fail, pass, warn } from './check.js';
import { agree, plural } from '@rankd/protocol/plural';

/** NUMA nodes ranks may land on: with allowed CPUs, in the allowed mems, not GPU memory. */
export function rankNumaNodes(f: Facts): number[] {
  const cpus = new Set(f.cpu.allowed);
  const mems = f.numa.allowed ? new Set(f.numa.allowed) : null;
  return f.numa.nodes
    .filter((n) => !n.cpuless && !n.gpuMemory && n.cpus.some((c) => cpus.has(c)) && (mems === null || mems.has(n.id)))
    .map((n) => n.id);
}

/** The kernel driver a device name comes from: mlx5_0, mlx5_bond_0 → mlx5; irdma-cvl01tf2 → irdma. */
export function rdmaDriver(device: string): string {
  if (device.includes('-')) return device.slice(0, device.indexOf('-'));
  return device.replace(/(_bond)?_?\d+$/, '') || device;
}

const portName = (d: RdmaDevice, p: RdmaPort) => `${d.name} port ${p.port}`;

export function rdmaPortCheck(node: string, f: Facts): DoctorCheck {
  const devices = f.rdma.devices;
  if (devices.length === 0) {
    return warn(
      node,
      'rdma.port',
      'no RDMA device: ranks will fall back to TCP',
      "load the NIC's RDMA driver and install rdma-core; `ibv_devices` should list the device",
    );
  }
  const down = devices.flatMap((d) => d.ports.filter((p) => p.state !== 'ACTIVE').map((p) => ({ d, p })));
  const total = devices.reduce((a, d) => a + d.ports.length, 0);
  if (down.length === 0) return pass(node, 'rdma.port', `${plural(total, 'RDMA port')} ACTIVE`);
  const list = down
    .map(({ d, p }) => `${portName(d, p)} is ${p.state}${p.physState ? ` (${p.physState})` : ''}`)
    .join(', ');
  const { d, p } = down[0]!;
  const fix =
    p.linkLayer === 'Ethernet'
      ? `bring the link up: \`ip link set ${p.netdev ?? '<netdev>'} up\`, then check the cable and switch port (\`ibv_devinfo -d ${d.name}\`)`
      : `check the cable and that a subnet manager runs on the fabric (\`ibstat ${d.name} ${p.port}\`)`;
  // a node with some ports up still runs ranks on those: WARN; with none up, nothing RDMA works
  const status = down.length === total ? fail : warn;
  return status(node, 'rdma.port', `${down.length} of ${plural(total, 'RDMA port')} not ACTIVE: ${list}`, fix);
}

/** RoCE ports need a RoCE v2 GID on a routable address (IPv4-mapped or global IPv6) for NCCL/UCX to use. */
export function roceGidCheck(node: string, f: Facts): DoctorCheck | null {
  const roce = f.rdma.devices.flatMap((d) =>
    d.ports.filter((p) => p.linkLayer === 'Ethernet' && p.state === 'ACTIVE').map((p) => ({ d, p })),
  );
  if (roce.length === 0) return null;
  const missing = roce.filter(({ p }) => !p.gids.some((g) => g.type === 'RoCE v2' && g.scope !== 'link-local'));
  if (missing.length === 0) {
    const first = roce[0]!;
    const gid = first.p.gids.find((g) => g.type === 'RoCE v2' && g.scope !== 'link-local')!;
    return pass(
      node,
      'rdma.gid',
      `every RoCE port has a RoCE v2 global GID (${portName(first.d, first.p)}: index ${gid.index}${gid.ipv4 ? `, ${gid.ipv4}` : ''})`,
    );
  }
  const list = missing.map(({ d, p }) => `${portName(d, p)}${p.netdev ? ` (${p.netdev})` : ''}`).join(', ');
  const { d, p } = missing[0]!;
  return fail(
    node,
    'rdma.gid',
    `no RoCE v2 GID with a routable address on ${list}: NCCL_IB_GID_INDEX has nothing to pick`,
    `give ${p.netdev ?? "the port's netdev"} an IP address (RoCE v2 GIDs follow the netdev's addresses) and check \`cat /sys/class/infiniband/${d.name}/ports/${p.port}/gid_attrs/types/*\``,
  );
}

/** Every NUMA node that will host ranks should have an ACTIVE RDMA NIC of its own (nccl #595). */
export function nicLocalityCheck(node: string, f: Facts): DoctorCheck | null {
  const active = f.rdma.devices.filter((d) => d.ports.some((p) => p.state === 'ACTIVE'));
  if (active.length === 0) return null;
  const unknown = active.filter((d) => d.numaNode === null || d.numaNode < 0);
  const numaNodes = rankNumaNodes(f);
  if (numaNodes.length <= 1 && unknown.length === 0)
    return pass(node, 'rdma.numa', 'one NUMA node: every NIC is local');
  if (unknown.length > 0) {
    return warn(
      node,
      'rdma.numa',
      `the firmware reports no NUMA node for ${unknown.map((d) => d.name).join(', ')} (numa_node = -1): NIC locality is unknown`,
      'enable ACPI SRAT/_PXM in the BIOS; on a cloud VM pick an instance type that exposes NUMA',
    );
  }
  const local = new Map<number, string[]>();
  for (const d of active) local.set(d.numaNode!, [...(local.get(d.numaNode!) ?? []), d.name]);
  const without = numaNodes.filter((n) => !local.has(n));
  if (without.length === 0) {
    return pass(
      node,
      'rdma.numa',
      `a local RDMA NIC on every rank NUMA node (${numaNodes.map((n) => `${n}: ${local.get(n)!.join(',')}`).join('; ')})`,
    );
  }
  const where = [...local.entries()].map(([n, names]) => `${names.join(',')} on node ${n}`).join('; ');
  return warn(
    node,
    'rdma.numa',
    `ranks on ${agree(without.length, 'NUMA node', 'NUMA nodes')} ${without.join(',')} have no local RDMA NIC (${where}): their traffic crosses the socket link`,
    `keep ranks on the NUMA nodes with a NIC (fewer --ranks-per-node), or add a NIC to node ${without[0]}`,
  );
}
