// `ibv_devinfo -v` (rdma-core) from facts, keeping only the lines whose values come
// from sysfs: the device name, transport (node_type), fw_ver, GUIDs, vendor_part_id
// (the PCI device id), hw_ver, board_id and port count; per port state, LIDs, LMC,
// link layer, GID table length, physical state and the GIDs. Lines that need a verbs
// query (vendor_id, MTUs, device capabilities, port counters) are left out rather than
// guessed. Layout, tabs and number formats are devinfo.c's; GIDs print as it prints
// them: RoCE v1 entries in full colon form, RoCE v2 entries as inet_ntop() writes them,
// with the type appended on Ethernet ports.
import type { Facts, Gid, RdmaDevice, RdmaPort } from '@rankd/protocol';

const TRANSPORTS: Record<number, string> = { 0: 'InfiniBand', 1: 'iWARP', 2: 'usNIC', 3: 'usNIC UDP' };
const PORT_STATES: Record<string, [string, number]> = {
  DOWN: ['PORT_DOWN', 1],
  INIT: ['PORT_INIT', 2],
  ARMED: ['PORT_ARMED', 3],
  ACTIVE: ['PORT_ACTIVE', 4],
  ACTIVE_DEFER: ['PORT_ACTIVE_DEFER', 5],
};
const PHYS_STATES: Record<string, [string, number]> = {
  Sleep: ['SLEEP', 1],
  Polling: ['POLLING', 2],
  Disabled: ['DISABLED', 3],
  PortConfigurationTraining: ['PORT_CONFIGURATION TRAINNING', 4],
  LinkUp: ['LINK_UP', 5],
  LinkErrorRecovery: ['LINK_ERROR_RECOVERY', 6],
  'Phy Test': ['PHY TEST', 7],
};

/** libibverbs' transport number from node_type ("1: CA" → 0, "4: RNIC" → 1, …). */
function transportNumber(d: RdmaDevice): number {
  const n = d.nodeType ? parseInt(d.nodeType, 10) : NaN;
  if (n >= 1 && n <= 3) return 0;
  if (n === 4) return 1;
  if (n === 5) return 2;
  if (n === 6) return 3;
  return -1;
}

function guid(hex: string | null): string {
  return (hex ?? '0'.repeat(16)).match(/.{4}/g)!.join(':');
}

export function renderIbvDevinfo(facts: Facts): string {
  if (facts.rdma.devices.length === 0) return '';
  return facts.rdma.devices.map(device).join('');
}

function device(d: RdmaDevice): string {
  const t = transportNumber(d);
  let out = `hca_id:\t${d.name}\n`;
  out += `\ttransport:\t\t\t${TRANSPORTS[t] ?? 'invalid transport'} (${t})\n`;
  if (d.fwVersion) out += `\tfw_ver:\t\t\t\t${d.fwVersion}\n`;
  out += `\tnode_guid:\t\t\t${guid(d.nodeGuid)}\n`;
  out += `\tsys_image_guid:\t\t\t${guid(d.sysImageGuid)}\n`;
  if (d.vendorPartId) out += `\tvendor_part_id:\t\t\t${parseInt(d.vendorPartId, 16)}\n`;
  if (d.hwRev) out += `\thw_ver:\t\t\t\t0x${parseInt(d.hwRev, 16).toString(16).toUpperCase()}\n`;
  if (d.boardId) out += `\tboard_id:\t\t\t${d.boardId}\n`;
  out += `\tphys_port_cnt:\t\t\t${d.ports.length}\n`;
  for (const p of d.ports) out += port(p, t === 0);
  return out;
}

function port(p: RdmaPort, infinibandTransport: boolean): string {
  const [stateName, stateNum] = PORT_STATES[p.state] ?? ['invalid state', 0];
  let out = `\t\tport:\t${p.port}\n`;
  out += `\t\t\tstate:\t\t\t${stateName} (${stateNum})\n`;
  out += `\t\t\tsm_lid:\t\t\t${p.smLid ?? 0}\n`;
  out += `\t\t\tport_lid:\t\t${p.lid ?? 0}\n`;
  out += `\t\t\tport_lmc:\t\t0x${(p.lmc ?? 0).toString(16).padStart(2, '0')}\n`;
  out += `\t\t\tlink_layer:\t\t${p.linkLayer === 'unknown' ? 'Unknown' : p.linkLayer}\n`;
  if (p.gidTableLength !== undefined) out += `\t\t\tgid_tbl_len:\t\t${p.gidTableLength}\n`;
  if (infinibandTransport && p.physState) {
    const [physName, physNum] = PHYS_STATES[p.physState] ?? ['invalid physical state', 0];
    out += `\t\t\tphys_state:\t\t${physName} (${physNum})\n`;
  }
  for (const g of p.gids) out += gidLine(g, p.linkLayer === 'Ethernet');
  return out + '\n';
}

function gidLine(g: Gid, ethernet: boolean): string {
  const words = g.gid.split(':').map((w) => parseInt(w, 16));
  // devinfo skips entries whose interface identifier (last 8 bytes) is zero
  if (words.slice(4).every((w) => w === 0)) return '';
  if (g.type === 'IB/RoCE v1')
    return `\t\t\tGID[${String(g.index).padStart(3)}]:\t\t${g.gid}${ethernet ? ', RoCE v1' : ''}\n`;
  if (g.type === 'RoCE v2')
    return `\t\t\tGID[${String(g.index).padStart(3)}]:\t\t${inetNtop6(words)}${ethernet ? ', RoCE v2' : ''}\n`;
  return '';
}

/** glibc's inet_ntop(AF_INET6): longest zero run (≥ 2 words) as "::", embedded IPv4 for mapped/compatible. */
export function inetNtop6(words: number[]): string {
  let best = { base: -1, len: 0 };
  let cur = { base: -1, len: 0 };
  for (let i = 0; i < 8; i++) {
    if (words[i] === 0) {
      cur = cur.base < 0 ? { base: i, len: 1 } : { base: cur.base, len: cur.len + 1 };
      if (cur.len > best.len) best = { ...cur };
    } else {
      cur = { base: -1, len: 0 };
    }
  }
  if (best.len < 2) best = { base: -1, len: 0 };
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (best.base >= 0 && i >= best.base && i < best.base + best.len) {
      if (i === best.base) out += ':';
      continue;
    }
    if (i !== 0) out += ':';
    const ipv4 =
      best.base === 0 &&
      (best.len === 6 || (best.len === 7 && words[7] !== 1) || (best.len === 5 && words[5] === 0xffff));
    if (i === 6 && ipv4) {
      out += [words[6]! >> 8, words[6]! & 0xff, words[7]! >> 8, words[7]! & 0xff].join('.');
      break;
    }
    out += words[i]!.toString(16);
  }
  if (best.base >= 0 && best.base + best.len === 8) out += ':';
  return out;
}
