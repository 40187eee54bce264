// RDMA devices from /sys/class/infiniband, as ibv_devices/ibv_devinfo know them.
//
// - node_guid and sys_image_guid are printed with colons ("b859:9f03:00d4:e0a2");
//   the facts keep 16 bare hex digits.
// - node_type is "1: CA" (InfiniBand and RoCE), "4: RNIC" (iWARP: irdma, eRDMA), …
//   and decides the transport as libibverbs does.
// - Port state and phys_state carry their number ("4: ACTIVE", "5: LinkUp").
// - The GID table: gids/N (all zeros when empty), gid_attrs/types/N ("IB/RoCE v1" or
//   "RoCE v2") and gid_attrs/ndevs/N (the netdev); the attributes of empty slots and
//   the ndevs of InfiniBand ports fail to read, which is normal.
import type { Gid, GidType, RdmaDevice, RdmaPort } from '@rankd/protocol';
import { naturalCompare } from '@rankd/protocol/natural-order';
import { deviceNumaNode } from './nics.js';
import { FactsWarningCode, parseInteger, pciAddressIn, type Sysfs } from './sysfs.js';

const IB = '/sys/class/infiniband';
const EMPTY_GID = /^[0:]*$/;

/** The uverbs ABI version libibverbs checks before it lists devices; null without kernel verbs. */
export function readVerbsAbi(sys: Sysfs): number | null {
  return sys.int('/sys/class/infiniband_verbs/abi_version', { optional: true });
}

export function readRdma(sys: Sysfs): RdmaDevice[] {
  const names = sys.entries(IB, { optional: true }) ?? [];
  return names.sort(naturalCompare).map((name) => readDevice(sys, name));
}

function readDevice(sys: Sysfs, name: string): RdmaDevice {
  const dir = `${IB}/${name}`;
  const devicePath = sys.real(`${dir}/device`);
  const pciAddress = devicePath ? pciAddressIn(devicePath) : null;
  const pciDir =
    devicePath && pciAddress ? devicePath.slice(0, devicePath.lastIndexOf(pciAddress) + pciAddress.length) : null;
  const nodeType = sys.text(`${dir}/node_type`, { optional: true });
  const ports = (sys.entries(`${dir}/ports`) ?? [])
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .sort((a, b) => a - b)
    .map((port) => readPort(sys, `${dir}/ports/${port}`, port, pciDir));
  return {
    name,
    nodeGuid: guid(sys, `${dir}/node_guid`),
    sysImageGuid: guid(sys, `${dir}/sys_image_guid`),
    nodeType,
    transport: transportOf(nodeType),
    fwVersion: sys.text(`${dir}/fw_ver`, { optional: true }) || null,
    hcaType: sys.text(`${dir}/hca_type`, { optional: true }) || null,
    boardId: sys.text(`${dir}/board_id`, { optional: true }) || null,
    vendorId: pciDir ? sys.text(`${pciDir}/vendor`, { optional: true }) : null,
    vendorPartId: pciDir ? sys.text(`${pciDir}/device`, { optional: true }) : null,
    hwRev: sys.text(`${dir}/hw_rev`, { optional: true }) || null,
    pciAddress,
    numaNode: devicePath ? deviceNumaNode(sys, `${dir}/device`, devicePath) : null,
    ports,
  };
}

/** libibverbs' mapping of node_type to transport. */
function transportOf(nodeType: string | null): RdmaDevice['transport'] {
  const n = nodeType ? parseInt(nodeType, 10) : NaN;
  if (n >= 1 && n <= 3) return 'InfiniBand'; // CA, switch, router
  if (n === 4) return 'iWARP'; // RNIC
  if (n === 5 || n === 6) return 'usNIC';
  return 'unknown';
}

function guid(sys: Sysfs, path: string): string | null {
  const text = sys.text(path, { optional: true });
  if (text === null) return null;
  const hex = text.replace(/:/g, '').toLowerCase();
  if (/^[0-9a-f]{16}$/.test(hex)) return hex;
  sys.warn(FactsWarningCode.Garbled, `not a GUID: "${text.slice(0, 64)}"`, path);
  return null;
}

/** "4: ACTIVE" → "ACTIVE"; "5: LinkUp" → "LinkUp". */
function stateName(text: string | null): string | null {
  if (text === null) return null;
  const m = /^\d+:\s*(.+)$/.exec(text);
  return m ? m[1]! : text || null;
}

function readPort(sys: Sysfs, dir: string, port: number, pciDir: string | null): RdmaPort {
  const layer = sys.text(`${dir}/link_layer`, { optional: true });
  const linkLayer = layer === 'InfiniBand' || layer === 'Ethernet' ? layer : 'unknown';
  const indexes = (sys.entries(`${dir}/gids`, { optional: true }) ?? [])
    .filter((g) => /^\d+$/.test(g))
    .map(Number)
    .sort((a, b) => a - b);
  const gids: Gid[] = [];
  for (const index of indexes) {
    const gid = readGid(sys, dir, index, linkLayer);
    if (gid) gids.push(gid);
  }
  const int = (file: string): number | null => {
    const t = sys.text(`${dir}/${file}`, { optional: true });
    return t === null ? null : parseInteger(t);
  };
  return {
    port,
    state: stateName(sys.text(`${dir}/state`)) ?? 'unknown',
    physState: stateName(sys.text(`${dir}/phys_state`, { optional: true })),
    linkLayer,
    rate: sys.text(`${dir}/rate`, { optional: true }) || null,
    lid: int('lid'),
    smLid: int('sm_lid'),
    lmc: int('lmc'),
    netdev: gids.find((g) => g.netdev !== null)?.netdev ?? ipoibNetdev(sys, pciDir, port),
    gids,
    gidTableLength: indexes.length,
  };
}

function readGid(sys: Sysfs, dir: string, index: number, linkLayer: RdmaPort['linkLayer']): Gid | null {
  const text = sys.text(`${dir}/gids/${index}`, { optional: true });
  if (text === null || EMPTY_GID.test(text)) return null;
  if (!/^[0-9a-f]{4}(:[0-9a-f]{4}){7}$/i.test(text)) {
    sys.warn(FactsWarningCode.Garbled, `not a GID: "${text.slice(0, 64)}"`, `${dir}/gids/${index}`);
    return null;
  }
  const gid = text.toLowerCase();
  const typeText = sys.text(`${dir}/gid_attrs/types/${index}`, { optional: true });
  let type: GidType = typeText === 'IB/RoCE v1' || typeText === 'RoCE v2' ? typeText : 'unknown';
  if (typeText === null && linkLayer === 'InfiniBand') type = 'IB/RoCE v1';
  const netdev =
    linkLayer === 'InfiniBand' ? null : sys.text(`${dir}/gid_attrs/ndevs/${index}`, { optional: true }) || null;
  const words = gid.split(':');
  const mapped = words.slice(0, 5).every((w) => w === '0000') && words[5] === 'ffff';
  const ipv4 = mapped
    ? [words[6]!, words[7]!].flatMap((w) => [parseInt(w.slice(0, 2), 16), parseInt(w.slice(2), 16)]).join('.')
    : null;
  const linkLocal = /^fe80:0000:0000:0000:/.test(gid);
  return { index, gid, type, netdev, scope: mapped ? 'ipv4-mapped' : linkLocal ? 'link-local' : 'global', ipv4 };
}

/**
 * InfiniBand ports have no GID netdevs; their IPoIB interface sits on the same PCI
 * function, one per port (dev_port = port - 1).
 */
function ipoibNetdev(sys: Sysfs, pciDir: string | null, port: number): string | null {
  if (!pciDir) return null;
  const nets = sys.entries(`${pciDir}/net`, { optional: true }) ?? [];
  if (nets.length <= 1) return nets[0] ?? null;
  for (const n of nets.sort(naturalCompare)) {
    if (sys.int(`${pciDir}/net/${n}/dev_port`, { optional: true }) === port - 1) return n;
  }
  return null;
}
