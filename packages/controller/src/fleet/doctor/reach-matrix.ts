// Reachability between every pair of nodes, over the address ranks will use: each agent
// opens a short-lived TCP echo listener on that address, then each agent connects to
// every other one and times the handshake and a few echoes. The agents do the probing,
// not the controller, because the question is whether node A reaches node B — the
// controller may sit on another network entirely.
import {
  ErrorCode,
  RankdError,
  type DoctorCheck,
  type Facts,
  type MatrixCell,
  type ProbeListening,
  type ProbeResult,
  type ReachMatrix,
} from '@rankd/protocol';
import type { AgentRequests } from '../exec/agent-requests.js';
import { failureOf } from '../exec/targets.js';
import { fail, pass } from './check.js';

export interface MatrixMember {
  node: string;
  /** The registered address, used without --iface. */
  address: string | null;
  facts: Facts | null;
}

/** n² probes: past this many nodes, narrow the pattern. */
export const MAX_MATRIX_NODES = 256;
const PROBE_TIMEOUT_MS = 3000;
const REPLY_MARGIN_MS = 5000;

export async function reachMatrix(
  members: readonly MatrixMember[],
  requests: AgentRequests,
  iface: string | undefined,
): Promise<{ matrix: ReachMatrix; checks: DoctorCheck[] }> {
  if (members.length > MAX_MATRIX_NODES) {
    throw new RankdError(
      ErrorCode.InvalidRequest,
      `the connection matrix takes at most ${MAX_MATRIX_NODES} nodes (${members.length} match); narrow the pattern`,
    );
  }
  const addresses = members.map((m) => rankAddress(m, iface));
  const ttlMs = PROBE_TIMEOUT_MS * 2 + REPLY_MARGIN_MS * 2 + members.length * 20;

  const listening = await Promise.all(
    members.map(async (m, i): Promise<{ port: number | null; why: string | null }> => {
      const a = addresses[i]!;
      if (a.address === null) return { port: null, why: a.why };
      try {
        const r = await requests.request<ProbeListening & { type: string }>(
          m.node,
          { type: 'probe.listen', address: a.address, ttlMs },
          'probe.listening',
          REPLY_MARGIN_MS,
        );
        return r.port === null
          ? { port: null, why: `cannot listen on ${a.address}: ${r.error?.message ?? 'unknown error'}` }
          : { port: r.port, why: null };
      } catch (err) {
        return { port: null, why: failureOf(err).message };
      }
    }),
  );

  const cells: Array<Array<MatrixCell | null>> = members.map(() => members.map(() => null));
  await Promise.all(
    members.map(async (m, i) => {
      const targets = members
        .map((t, j) => ({ j, node: t.node, address: addresses[j]!.address, port: listening[j]!.port }))
        .filter((t) => t.j !== i && t.address !== null && t.port !== null);
      for (let j = 0; j < members.length; j++) {
        if (j !== i && listening[j]!.port === null)
          cells[i]![j] = {
            ok: false,
            connectMs: null,
            rttMs: null,
            error: `${members[j]!.node} is not listening: ${listening[j]!.why}`,
          };
      }
      if (targets.length === 0) return;
      try {
        const r = await requests.request<ProbeResult & { type: string }>(
          m.node,
          {
            type: 'probe.connect',
            targets: targets.map((t) => ({ node: t.node, address: t.address!, port: t.port! })),
            timeoutMs: PROBE_TIMEOUT_MS,
          },
          'probe.result',
          PROBE_TIMEOUT_MS + REPLY_MARGIN_MS + targets.length * 20,
        );
        const byNode = new Map(r.results.map((o) => [o.node, o]));
        for (const t of targets) {
          const o = byNode.get(t.node);
          cells[i]![t.j] = o
            ? { ok: o.ok, connectMs: o.connectMs, rttMs: o.rttMs, error: o.error }
            : { ok: false, connectMs: null, rttMs: null, error: 'no result for this target' };
        }
      } catch (err) {
        for (const t of targets)
          cells[i]![t.j] = {
            ok: false,
            connectMs: null,
            rttMs: null,
            error: `${m.node} could not probe: ${failureOf(err).message}`,
          };
      }
    }),
  );

  const checks = members.map((m, i) => reachCheck(m.node, i, members, addresses[i]!, listening[i]!, cells));
  return { matrix: { nodes: members.map((m) => m.node), addresses: addresses.map((a) => a.address), cells }, checks };
}

function reachCheck(
  node: string,
  i: number,
  members: readonly MatrixMember[],
  own: { address: string | null; why: string | null },
  listening: { port: number | null; why: string | null },
  cells: ReadonlyArray<ReadonlyArray<MatrixCell | null>>,
): DoctorCheck {
  if (own.address === null)
    return fail(
      node,
      'reach',
      `no address to probe: ${own.why}`,
      'give the node an address on the rank network (rankd agent --address, or pick the netdev with --iface)',
    );
  if (listening.port === null)
    return fail(
      node,
      'reach',
      `peers cannot be probed on ${own.address}: ${listening.why}`,
      `check that ${own.address} is configured on ${node} (\`ip -br addr\`)`,
    );
  const row = cells[i]!;
  const bad = row.map((c, j) => ({ c, peer: members[j]!.node })).filter(({ c }, j) => j !== i && c !== null && !c.ok);
  const inbound = members
    .map((p, j) => ({ c: cells[j]![i] ?? null, peer: p.node }))
    .filter(({ c }, j) => j !== i && c !== null && !c.ok && !/is not listening/.test(c.error ?? ''));
  if (bad.length === 0 && inbound.length === 0) {
    const rtts = row.filter((c): c is MatrixCell => c !== null && c.rttMs !== null).map((c) => c.rttMs!);
    const peers = members.length - 1;
    return pass(
      node,
      'reach',
      peers === 0
        ? 'no peers to probe'
        : `reaches ${peers === 1 ? 'its peer' : `all ${peers} peers`} over ${own.address}${rtts.length ? ` (round trip ≤ ${Math.max(...rtts)} ms)` : ''}`,
    );
  }
  const parts = [
    ...bad.map(({ c, peer }) => `cannot reach ${peer}: ${c!.error ?? 'failed'}`),
    ...inbound.map(({ c, peer }) => `${peer} cannot reach it: ${c!.error ?? 'failed'}`),
  ];
  return fail(
    node,
    'reach',
    parts.join('; '),
    `allow TCP between the nodes on the rank network (firewall, routes, MTU); try \`nc -vz <peer address> <port>\` from ${node}`,
  );
}

/** The IPv4 address of --iface from the node's facts, or its registered address. */
export function rankAddress(
  m: MatrixMember,
  iface: string | undefined,
): { address: string | null; why: string | null } {
  if (iface) {
    const nic = m.facts?.nics.find((n) => n.name === iface);
    if (!nic)
      return {
        address: null,
        why: m.facts ? `${m.node} has no network interface ${iface}` : `${m.node} has not reported facts`,
      };
    const inet = nic.addresses.find((a) => a.family === 'inet') ?? nic.addresses[0];
    return inet
      ? { address: inet.address, why: null }
      : { address: null, why: `${iface} on ${m.node} has no IP address` };
  }
  if (!m.address) return { address: null, why: `${m.node} has no registered address` };
  return { address: m.address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1'), why: null };
}
