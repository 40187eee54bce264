// Which RDMA ports each rank uses (`--nic local|all|none|PATTERN[,PATTERN]`).
//
// - Candidates are the RDMA devices with an active port; patterns (globs over device
//   names) narrow them, then the local rule picks among what is left.
// - `local`: the devices on the rank's NUMA nodes; when there are none, the nearest by
//   NUMA distance; when distance is unknown, all of them. A NIC on the other socket
//   costs a large part of its bandwidth, so locality comes first.
// - With one rank per GPU, the rank gets the one device nearest its GPU: on the GPU's
//   NUMA node (else the nearest), the i-th GPU of that node pairs with the i-th device
//   in PCI order. On 8-GPU servers each GPU shares a PCIe switch with one HCA and both
//   are numbered in the same order, while bus distance alone can pair a GPU with its
//   neighbour's HCA when the buses of two switches interleave.
import { PlanErrorCode, type Facts, type RankNic } from '@rankd/protocol';
import { PlanError } from './errors.js';
import { chooseGid, type GidPreference } from './gid.js';
import { globToRegExp } from './glob.js';
import { naturalCompare } from '@rankd/protocol/natural-order';
import type { NodeTopology } from './topology.js';

export type NicMode = { kind: 'none' } | { kind: 'all' } | { kind: 'local'; patterns: readonly string[] | null };

export interface NicCandidate {
  device: string;
  /** An InfiniBand-transport device on Ethernet ports: RoCE, whose GID matters. */
  roce: boolean;
  numa: number | null;
  pci: { domain: number; bus: number } | null;
  ports: RankNic[];
}

export function parseNicSpec(text: string | undefined): NicMode {
  const value = (text ?? 'local').trim();
  if (value === 'none') return { kind: 'none' };
  if (value === 'all') return { kind: 'all' };
  if (value === 'local') return { kind: 'local', patterns: null };
  const patterns = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  return { kind: 'local', patterns };
}

export interface NodeNics {
  mode: NicMode;
  candidates: NicCandidate[];
  /** Patterns that matched no device on this node. */
  unmatched: string[];
}

/** The node's candidate devices with their active ports and chosen GIDs. */
export function nodeNics(facts: Facts, mode: NicMode, pref: GidPreference): NodeNics {
  if (mode.kind === 'none') return { mode, candidates: [], unmatched: [] };
  const all: NicCandidate[] = [];
  for (const dev of facts.rdma.devices) {
    const ports: RankNic[] = [];
    for (const port of dev.ports) {
      if (port.state !== 'ACTIVE') continue;
      // RoCE GIDs only matter on Ethernet ports of an IB-transport device (not iWARP)
      const roce = port.linkLayer === 'Ethernet' && dev.transport === 'InfiniBand';
      const gid = roce ? chooseGid(port.gids, pref) : null;
      ports.push({
        device: dev.name,
        port: port.port,
        netdev: port.netdev,
        linkLayer: port.linkLayer,
        gidIndex: gid?.index ?? null,
        gid: gid?.gid ?? null,
      });
    }
    if (ports.length === 0) continue;
    all.push({
      device: dev.name,
      roce: dev.transport === 'InfiniBand' && ports.some((p) => p.linkLayer === 'Ethernet'),
      numa: dev.numaNode !== null && dev.numaNode >= 0 ? dev.numaNode : null,
      pci: parsePci(dev.pciAddress),
      ports,
    });
  }
  all.sort((a, b) => naturalCompare(a.device, b.device));
  if (mode.kind !== 'local' || mode.patterns === null) return { mode, candidates: all, unmatched: [] };
  const unmatched: string[] = [];
  const keep = new Set<NicCandidate>();
  for (const pattern of mode.patterns) {
    const re = globToRegExp(pattern);
    const hits = all.filter((c) => re.test(c.device));
    if (hits.length === 0) unmatched.push(pattern);
    for (const c of hits) keep.add(c);
  }
  return { mode, candidates: all.filter((c) => keep.has(c)), unmatched };
}

/** Throws when the patterns leave a node without any device. */
export function requireNicMatch(nics: NodeNics, facts: Facts, node: string): void {
  const patterns = nics.mode.kind === 'local' ? nics.mode.patterns : null;
  if (patterns === null || nics.candidates.length > 0) return;
  const regexps = patterns.map(globToRegExp);
  const present = facts.rdma.devices.map((d) => d.name);
  const active = facts.rdma.devices.filter((d) => d.ports.some((p) => p.state === 'ACTIVE')).map((d) => d.name);
  const matchedInactive = present.filter((name) => !active.includes(name) && regexps.some((re) => re.test(name)));
  const reason =
    matchedInactive.length > 0
      ? `--nic ${patterns.join(',')} matches ${matchedInactive.join(',')}, but no port of it is ACTIVE`
      : `--nic ${patterns.join(',')} matches no RDMA device (present: ${present.join(',') || 'none'})`;
  throw new PlanError(PlanErrorCode.NicNoMatch, reason, {
    node,
    suggestion: { nic: active.length > 0 ? active.join(',') : 'none' },
  });
}

/** A rank's GPU: its NUMA node and its position among the GPUs of that node (PCI order). */
export interface RankGpu {
  numa: number | null;
  pci: string | null;
  ordinal: number;
}

export interface NicPick {
  nics: RankNic[];
  /** Why a non-local device was taken, for the map's notes. */
  fallback: string | null;
}

export function pickRankNics(
  nics: NodeNics,
  topo: NodeTopology,
  rankNumas: readonly number[],
  gpu: RankGpu | null,
): NicPick {
  const { candidates } = nics;
  if (candidates.length === 0) return { nics: [], fallback: null };
  if (nics.mode.kind === 'all') return { nics: candidates.flatMap((c) => c.ports), fallback: null };
  if (gpu) return nearestToGpu(candidates, topo, gpu);
  // on a machine with one NUMA node every device is local, whatever numa_node it reports
  const single = topo.numaDomains.length <= 1;
  const local = candidates.filter((c) => single || (c.numa !== null && rankNumas.includes(c.numa)));
  if (local.length > 0) return { nics: local.flatMap((c) => c.ports), fallback: null };
  const where = `NUMA node ${rankNumas.join(',') || '?'}`;
  const nearest = nearestByDistance(candidates, topo, rankNumas);
  if (nearest) {
    return {
      nics: nearest.flatMap((c) => c.ports),
      fallback: `no RDMA device on ${where}; took the nearest: ${nearest.map((c) => c.device).join(',')}`,
    };
  }
  const why = candidates.every((c) => c.numa === null)
    ? 'the devices report no NUMA node'
    : 'no NUMA distances are known';
  return { nics: candidates.flatMap((c) => c.ports), fallback: `no RDMA device on ${where} and ${why}; took all` };
}

function nearestByDistance(
  candidates: readonly NicCandidate[],
  topo: NodeTopology,
  from: readonly number[],
): NicCandidate[] | null {
  let best = Infinity;
  let out: NicCandidate[] = [];
  for (const c of candidates) {
    if (c.numa === null) continue;
    let d = Infinity;
    for (const n of from) d = Math.min(d, topo.distance(n, c.numa) ?? Infinity);
    if (d < best) {
      best = d;
      out = [c];
    } else if (d === best && d !== Infinity) out.push(c);
  }
  return best === Infinity ? null : out;
}

function nearestToGpu(candidates: readonly NicCandidate[], topo: NodeTopology, gpu: RankGpu): NicPick {
  let pool: readonly NicCandidate[] = candidates;
  let fallback: string | null = null;
  if (gpu.numa !== null) {
    const same = candidates.filter((c) => c.numa === gpu.numa);
    if (same.length > 0) pool = same;
    else {
      pool = nearestByDistance(candidates, topo, [gpu.numa]) ?? candidates;
      fallback = `no RDMA device on NUMA node ${gpu.numa} of GPU ${gpu.pci ?? '?'}; took the nearest: ${pool.map((c) => c.device).join(',')}`;
    }
  }
  const byPci = [...pool].sort((a, b) => pciOrder(a.pci, b.pci) || naturalCompare(a.device, b.device));
  return { nics: byPci[gpu.ordinal % byPci.length]!.ports, fallback };
}

function pciOrder(a: { domain: number; bus: number } | null, b: { domain: number; bus: number } | null): number {
  if (!a || !b) return a ? -1 : b ? 1 : 0;
  return a.domain - b.domain || a.bus - b.bus;
}

function parsePci(address: string | null): { domain: number; bus: number } | null {
  if (!address) return null;
  const m = /^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):[0-9a-fA-F]{2}\.[0-7]$/.exec(address);
  if (!m) return null;
  return { domain: m[1] ? parseInt(m[1], 16) : 0, bus: parseInt(m[2]!, 16) };
}
