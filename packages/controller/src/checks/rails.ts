// What a net check measures on each node: the rails, and each node's end of each rail. The
// probes use what the planner gives a rank: the RDMA devices with an active port and the
// GID the planner picks on each, or, on nodes without RDMA, TCP over the node's rank
// address. `--rail NIC` names one: an RDMA device, or a netdev measured over TCP.
import { DEFAULT_GID_PREFERENCE, nodeNics, type NicCandidate } from '@rankd/planner';
import type { Facts } from '@rankd/protocol';
import { rankAddress } from '../fleet/doctor/reach-matrix.js';
import type { RailInfo } from './link-analysis.js';

export interface CheckMember {
  node: string;
  /** The registered address: the rank address when no netdev is named. */
  address: string | null;
  facts: Facts | null;
}

/** Where a node's probes run on one rail. */
export interface RailEndpoint {
  address: string;
  device?: string;
  gidIndex?: number;
}

export type Endpoint = RailEndpoint | { problem: string };

export interface RailPlan {
  rail: RailInfo;
  endpoints: Map<string, Endpoint>;
}

/** The rail of the nodes' rank addresses, when no NIC is named and no node has RDMA. */
export const TCP_RAIL = 'tcp';

const TCP_TOOLS = ['iperf3'];
const RDMA_TOOLS = ['ib_write_bw', 'ib_write_lat'];

export function planRails(members: readonly CheckMember[], rail: string | undefined): RailPlan[] {
  const rdma = new Map(members.map((m) => [m.node, m.facts ? rdmaCandidates(m.facts) : []]));
  if (rail !== undefined) {
    const isRdma = [...rdma.values()].some((cs) => cs.some((c) => c.device === rail));
    return [isRdma ? rdmaRail(members, rail, rdma) : tcpRail(members, rail)];
  }
  const devices = [...new Set([...rdma.values()].flatMap((cs) => cs.map((c) => c.device)))].sort();
  if (devices.length === 0) return [tcpRail(members, undefined)];
  return devices.map((d) => rdmaRail(members, d, rdma));
}

function tcpRail(members: readonly CheckMember[], netdev: string | undefined): RailPlan {
  const endpoints = new Map<string, Endpoint>();
  for (const m of members) {
    const a = rankAddress(m, netdev);
    endpoints.set(m.node, a.address === null ? { problem: a.why ?? 'no address' } : { address: a.address });
  }
  return { rail: { name: netdev ?? TCP_RAIL, kind: 'tcp', tools: TCP_TOOLS }, endpoints };
}

function rdmaRail(
  members: readonly CheckMember[],
  device: string,
  rdma: ReadonlyMap<string, NicCandidate[]>,
): RailPlan {
  const endpoints = new Map<string, Endpoint>();
  for (const m of members) {
    const nic = rdma.get(m.node)?.find((c) => c.device === device);
    const port = nic?.ports[0];
    if (!nic || !port) {
      endpoints.set(m.node, { problem: `${m.node} has no RDMA device ${device} with an active port` });
      continue;
    }
    if (nic.roce && port.gidIndex === null) {
      endpoints.set(m.node, { problem: `${device} on ${m.node} has no RoCE GID a rank could use` });
      continue;
    }
    // perftest exchanges its connection details over TCP: the port's own netdev address, else the rank address
    const a = port.netdev ? rankAddress(m, port.netdev) : { address: null, why: null };
    const address = a.address ?? rankAddress(m, undefined).address;
    if (address === null) {
      endpoints.set(m.node, { problem: `${m.node} has no address to exchange ${device}'s connection details on` });
      continue;
    }
    endpoints.set(m.node, {
      address,
      device,
      ...(port.gidIndex !== null ? { gidIndex: port.gidIndex } : {}),
    });
  }
  return { rail: { name: device, kind: 'rdma', tools: RDMA_TOOLS }, endpoints };
}

function rdmaCandidates(facts: Facts): NicCandidate[] {
  return nodeNics(facts, { kind: 'local', patterns: null }, DEFAULT_GID_PREFERENCE).candidates;
}
