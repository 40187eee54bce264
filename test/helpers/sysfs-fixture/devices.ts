// PCI functions, network interfaces, RDMA devices and GPUs in the kernel's layout: the
// device directories live under devices/, and class/ and bus/ entries are relative
// symlinks into them, so that readers must resolve links as they do on a real system.
import type { MachineSpec, NicSpec, RdmaDeviceSpec, RdmaPortSpec } from './spec.js';
import { guidWithColons, type Tree } from './tree.js';

const PORT_STATES: Record<string, number> = { DOWN: 1, INIT: 2, ARMED: 3, ACTIVE: 4, ACTIVE_DEFER: 5 };
const PHYS_STATES: Record<string, number> = {
  Sleep: 1,
  Polling: 2,
  Disabled: 3,
  PortConfigurationTraining: 4,
  LinkUp: 5,
  LinkErrorRecovery: 6,
  'Phy Test': 7,
};
const EMPTY_GID = '0000:0000:0000:0000:0000:0000:0000:0000';

interface PciFunction {
  vendor?: string;
  device?: string;
  pciClass?: string;
  numaNode?: number;
}

export class DeviceWriter {
  private readonly made = new Set<string>();

  constructor(private readonly tree: Tree) {}

  /** Creates a PCI function once; returns its directory under sys/devices. */
  pci(bdf: string, fn: PciFunction): string {
    const dir = `sys/devices/pci${bdf.slice(0, 7)}/${bdf}`;
    if (this.made.has(bdf)) return dir;
    this.made.add(bdf);
    this.tree.attr(`${dir}/vendor`, fn.vendor ?? '0x15b3');
    this.tree.attr(`${dir}/device`, fn.device ?? '0x101b');
    this.tree.attr(`${dir}/class`, fn.pciClass ?? '0x020000');
    this.tree.attr(`${dir}/numa_node`, fn.numaNode ?? -1);
    this.tree.link(`sys/bus/pci/devices/${bdf}`, dir);
    return dir;
  }

  nic(n: NicSpec): void {
    let dir: string;
    if (n.pci) {
      const pciDir = this.pci(n.pci, {
        pciClass: n.type === 32 ? '0x020700' : '0x020000',
        ...(n.numaNode === undefined ? {} : { numaNode: n.numaNode }),
      });
      dir = `${pciDir}/net/${n.name}`;
      this.tree.link(`${dir}/device`, pciDir);
    } else {
      dir = `sys/devices/virtual/net/${n.name}`;
    }
    this.tree.link(`sys/class/net/${n.name}`, dir);
    this.tree.attr(`${dir}/address`, n.mac ?? '02:00:00:00:00:01');
    this.tree.attr(`${dir}/mtu`, n.mtu ?? 1500);
    this.tree.attr(`${dir}/operstate`, n.state ?? 'up');
    this.tree.attr(`${dir}/type`, n.type ?? 1);
    this.tree.attr(`${dir}/dev_port`, n.devPort ?? 0);
    if (n.speedMbps !== null && n.pci) this.tree.attr(`${dir}/speed`, n.speedMbps ?? 100000);
  }

  rdma(r: RdmaDeviceSpec): void {
    const ethernet = r.ports.some((p) => p.linkLayer === 'Ethernet');
    const pciDir = this.pci(r.pci, {
      pciClass: ethernet ? '0x020000' : '0x020700',
      ...(r.pciVendor ? { vendor: r.pciVendor } : {}),
      ...(r.pciDevice ? { device: r.pciDevice } : {}),
      ...(r.numaNode === undefined ? {} : { numaNode: r.numaNode }),
    });
    const parent = r.auxDevice ? `${pciDir}/${r.auxDevice}` : pciDir;
    const dir = `${parent}/infiniband/${r.name}`;
    this.tree.link(`sys/class/infiniband/${r.name}`, dir);
    this.tree.link(`${dir}/device`, parent);
    const nodeType = r.nodeType ?? 'CA';
    this.tree.attr(`${dir}/node_type`, nodeType === 'CA' ? '1: CA' : '4: RNIC');
    this.tree.attr(`${dir}/node_guid`, guidWithColons(r.nodeGuid));
    this.tree.attr(`${dir}/sys_image_guid`, guidWithColons(r.sysImageGuid ?? r.nodeGuid));
    this.tree.attr(`${dir}/fw_ver`, r.fwVer ?? '28.39.1002');
    if (r.hcaType !== undefined) this.tree.attr(`${dir}/hca_type`, r.hcaType);
    if (r.boardId !== undefined) this.tree.attr(`${dir}/board_id`, r.boardId);
    this.tree.attr(`${dir}/hw_rev`, r.hwRev ?? '0x0');
    this.tree.attr(`${dir}/node_desc`, `${r.name} HCA-1`);
    r.ports.forEach((p, i) => this.port(`${dir}/ports/${i + 1}`, p));
  }

  private port(dir: string, p: RdmaPortSpec): void {
    const state = p.state ?? 'ACTIVE';
    const phys = p.physState ?? 'LinkUp';
    this.tree.attr(`${dir}/state`, `${PORT_STATES[state] ?? 0}: ${state}`);
    this.tree.attr(`${dir}/phys_state`, `${PHYS_STATES[phys] ?? 0}: ${phys}`);
    this.tree.attr(`${dir}/link_layer`, p.linkLayer);
    this.tree.attr(`${dir}/rate`, p.rate ?? '100 Gb/sec (4X EDR)');
    this.tree.attr(`${dir}/lid`, `0x${(p.lid ?? 0).toString(16)}`);
    this.tree.attr(`${dir}/sm_lid`, `0x${(p.smLid ?? 0).toString(16)}`);
    this.tree.attr(`${dir}/lmc`, p.lmc ?? 0);
    this.tree.attr(`${dir}/cap_mask`, '0x00010000');
    this.tree.attr(`${dir}/pkeys/0`, '0xffff');
    const gids = p.gids ?? [];
    gids.forEach((g, i) => {
      this.tree.attr(`${dir}/gids/${i}`, g ? g.gid : EMPTY_GID);
      // empty slots have no attributes: reading them fails with EINVAL on a live system
      if (!g) return;
      this.tree.attr(`${dir}/gid_attrs/types/${i}`, g.type ?? 'IB/RoCE v1');
      if (g.netdev !== undefined) this.tree.attr(`${dir}/gid_attrs/ndevs/${i}`, g.netdev);
    });
    if (gids.length === 0) this.tree.dir(`${dir}/gids`);
  }
}

export function writeDevices(tree: Tree, m: MachineSpec): void {
  const w = new DeviceWriter(tree);
  tree.dir('sys/class/net');
  for (const n of m.nics ?? []) w.nic(n);
  for (const r of m.rdma ?? []) w.rdma(r);
  for (const [i, g] of (m.gpus ?? []).entries()) {
    const vendor = g.vendor ?? '0x10de';
    w.pci(g.pci, {
      vendor,
      device: g.device ?? '0x2330',
      pciClass: g.pciClass ?? '0x030200',
      ...(g.numaNode === undefined ? {} : { numaNode: g.numaNode }),
    });
    if (vendor === '0x10de' && g.model !== undefined) {
      tree.raw(
        `proc/driver/nvidia/gpus/${g.pci}/information`,
        `Model: \t\t ${g.model}\nIRQ:   \t\t 0\nGPU UUID: \t ${g.uuid ?? 'GPU-00000000-0000-0000-0000-000000000000'}\nBus Location: \t ${g.pci}\nDevice Minor: \t ${g.minor ?? i}\n`,
      );
    }
  }
}
