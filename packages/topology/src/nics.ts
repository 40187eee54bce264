// Network interfaces from /sys/class/net.
//
// Each entry is a symlink into devices/: physical interfaces resolve under a PCI
// function (whose numa_node gives their locality), virtual ones under devices/virtual.
// IP addresses exist only on the live system (os.networkInterfaces); a captured tree
// has none.
import { networkInterfaces } from 'node:os';
import type { IpAddress, Nic } from '@rankd/protocol';
import { naturalCompare } from '@rankd/protocol/natural-order';
import { pciAddressIn, type Sysfs } from './sysfs.js';

const NET = '/sys/class/net';

export interface NicReadOptions {
  live: boolean;
}

export function readNics(sys: Sysfs, options: NicReadOptions): Nic[] {
  const names = sys.entries(NET, { optional: true }) ?? [];
  const live = options.live ? liveAddresses() : new Map<string, IpAddress[]>();
  return names.sort(naturalCompare).map((name) => readNic(sys, name, live.get(name) ?? []));
}

function readNic(sys: Sysfs, name: string, addresses: IpAddress[]): Nic {
  const dir = `${NET}/${name}`;
  const target = sys.link(dir) ?? '';
  const isVirtual = target.includes('/virtual/') || !sys.exists(`${dir}/device`);
  const devicePath = isVirtual ? null : sys.real(`${dir}/device`);
  const pciAddress = devicePath ? pciAddressIn(devicePath) : null;
  const speed = isVirtual ? null : sys.int(`${dir}/speed`, { optional: true });
  return {
    name,
    mac: sys.text(`${dir}/address`, { optional: true }) || null,
    mtu: sys.int(`${dir}/mtu`, { optional: true }),
    state: sys.text(`${dir}/operstate`, { optional: true }) || 'unknown',
    // the kernel reports -1 (or fails the read) when the link is down
    speedMbps: speed !== null && speed > 0 ? speed : null,
    pciAddress,
    numaNode: isVirtual ? null : deviceNumaNode(sys, `${dir}/device`, devicePath),
    rdmaDevice: null,
    addresses,
    virtual: isVirtual,
  };
}

/**
 * numa_node of a device, or of the PCI function above it (auxiliary devices such as
 * irdma's ice.roce.N carry none). -1 (no locality from firmware) becomes null.
 */
export function deviceNumaNode(sys: Sysfs, devicePath: string, realPath: string | null): number | null {
  let node = sys.int(`${devicePath}/numa_node`, { optional: true });
  if (node === null && realPath) {
    const pci = pciAddressIn(realPath);
    if (pci) {
      const pciDir = realPath.slice(0, realPath.lastIndexOf(pci) + pci.length);
      node = sys.int(`${pciDir}/numa_node`, { optional: true });
    }
  }
  return node !== null && node >= 0 ? node : null;
}

function liveAddresses(): Map<string, IpAddress[]> {
  const out = new Map<string, IpAddress[]>();
  for (const [name, list] of Object.entries(networkInterfaces())) {
    out.set(
      name,
      (list ?? []).map((a) => ({
        family: a.family === 'IPv4' ? ('inet' as const) : ('inet6' as const),
        address: a.address,
        prefixLength: prefixOf(a.netmask),
      })),
    );
  }
  return out;
}

function prefixOf(netmask: string): number {
  if (netmask.includes('.')) return netmask.split('.').reduce((n, o) => n + bitCount(Number(o)), 0);
  return netmask.split(':').reduce((n, h) => n + bitCount(parseInt(h || '0', 16)), 0);
}

function bitCount(v: number): number {
  let n = 0;
  for (let x = v; x; x &= x - 1) n++;
  return n;
}
