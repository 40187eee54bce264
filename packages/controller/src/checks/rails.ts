// What a net check measures on each node: the rails, and each node's end of each rail. The
// probes use what the planner gives a rank: the RDMA devices with an active port and the
// GID the planner picks on each, or, on nodes without RDMA, TCP over the node's rank
// address. `--rail NIC` names one: an RDMA device, or a netdev measured over TCP.
import { isIPv4 } from 'node:net';
import { DEFAULT_GID_PREFERENCE, nodeNics, type NicCandidate } from '@rankd/planner';
import { CheckErrorCode, RankdError, type Facts } from '@rankd/protocol';
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
  /** The device's port (perftest -i). */
  ibPort?: number;
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
    // a device known on any node, active or not: its problems then name the device, not a netdev
    const isRdma = members.some((m) => m.facts?.rdma.devices.some((d) => d.name === rail));
    const plan = isRdma ? rdmaRail(members, rail, rdma) : tcpRail(members, rail);
    refuseUnknownRail(rail, plan);
    return [plan];
  }
  const devices = [...new Set([...rdma.values()].flatMap((cs) => cs.map((c) => c.device)))].sort();
  if (devices.length === 0) return [tcpRail(members, undefined)];
  return devices.map((d) => rdmaRail(members, d, rdma));
}

/**
 * A named rail that no node has is a typo, not a finding: judged, it would flag every node,
 * and --drain would drain them all.
 */
function refuseUnknownRail(rail: string, plan: RailPlan): void {
  const problems = [...plan.endpoints.values()].flatMap((e) => ('problem' in e ? [e.problem] : []));
  if (problems.length === 0 || problems.length < plan.endpoints.size) return;
  const more = problems.length > 1 ? `; and ${problems.length - 1} more` : '';
  throw new RankdError(
    CheckErrorCode.UnknownRail,
    `--rail ${rail}: none of the selected nodes has a NIC ${rail} (${problems[0]}${more})`,
  );
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
  for (const m of members) endpoints.set(m.node, rdmaEndpoint(m, device, rdma.get(m.node) ?? []));
  return { rail: { name: device, kind: 'rdma', tools: RDMA_TOOLS }, endpoints };
}

/**
 * perftest's -x takes GID indexes 0 to 64 (MAX_GID_IX in perftest's
 * src/perftest_parameters.h, 4.5 to the 2026 master); a larger one is refused by its
 * option parser, so it is a problem here, named, instead of a failed probe.
 */
const PERFTEST_MAX_GID_INDEX = 64;

/** One node's end of an RDMA rail: the port and GID a rank gets, and an IPv4 address for perftest's exchange. */
function rdmaEndpoint(m: CheckMember, device: string, candidates: readonly NicCandidate[]): Endpoint {
  if (!m.facts) return { problem: `${m.node} has not reported facts, so its RDMA devices are unknown` };
  const port = candidates.find((c) => c.device === device)?.ports[0];
  if (!port) {
    const others = candidates.map((c) => c.device).join(', ');
    return {
      problem: `${m.node} has no RDMA device ${device} with an active port (active: ${others || 'none'})`,
    };
  }
  // perftest connects an iWARP device only through rdma_cm (-R), whose listener is no TCP
  // port the agent could watch; these probes exchange queue pairs over TCP instead
  const transport = m.facts.rdma.devices.find((d) => d.name === device)?.transport;
  if (transport === 'iWARP')
    return { problem: `${device} on ${m.node} is an iWARP device, which rankd's perftest probes do not measure` };
  const roce = port.linkLayer === 'Ethernet';
  if (roce && port.gidIndex === null)
    return { problem: `${device} port ${port.port} on ${m.node} has no RoCE GID a rank could use` };
  if (port.gidIndex !== null && port.gidIndex > PERFTEST_MAX_GID_INDEX)
    return {
      problem:
        `${device} port ${port.port} on ${m.node}: a rank's GID index is ${port.gidIndex}, ` +
        `and perftest's -x takes 0 to ${PERFTEST_MAX_GID_INDEX}`,
    };
  const address = exchangeAddress(m, port.netdev);
  if ('problem' in address) return address;
  return {
    address: address.ipv4,
    device,
    ibPort: port.port,
    // on InfiniBand a rank routes by LID, and so does perftest without -x
    ...(roce && port.gidIndex !== null ? { gidIndex: port.gidIndex } : {}),
  };
}

/**
 * The IPv4 address perftest's two sides exchange their queue-pair details over: TCP, and
 * IPv4 unless told otherwise (src/perftest_communication.c). The port's own netdev's,
 * when it has one; an InfiniBand port often has no IPoIB address, and then the rank
 * address carries the exchange. Either way the measured traffic is the RDMA port's: the
 * exchange only sets it up.
 */
function exchangeAddress(m: CheckMember, netdev: string | null): { ipv4: string } | { problem: string } {
  const own = netdev ? m.facts?.nics.find((n) => n.name === netdev)?.addresses.find((a) => a.family === 'inet') : null;
  if (own) return { ipv4: own.address };
  const rank = rankAddress(m, undefined).address;
  if (rank !== null && isIPv4(rank)) return { ipv4: rank };
  const where = netdev ? `${netdev} has no IPv4 address and ` : '';
  return {
    problem: `${m.node}: ${where}its rank address is ${rank ?? 'unknown'}, not IPv4; perftest exchanges its setup over IPv4`,
  };
}

function rdmaCandidates(facts: Facts): NicCandidate[] {
  return nodeNics(facts, { kind: 'local', patterns: null }, DEFAULT_GID_PREFERENCE).candidates;
}
