// What a net check's probes mean: each rail's median, the links below the threshold, and a
// verdict per node. Pure, so that the bench can time it over 512 simulated nodes.
//
// A slow NIC or cable slows every link of its node, so a node is flagged when most of its
// links are slow. A node whose slow links all lead to flagged peers is fine: the peers
// explain them. A slow link between two nodes whose other links are fine is the path between
// them (a switch port, an ECMP hash): the link stays flagged, and the check fails, but
// draining either node would not fix it, so neither is flagged.
import { formatBitRate } from '@rankd/protocol/bit-rate';
import type { LinkResult, NodeVerdict, RailKind, RailSummary, Spread } from '@rankd/protocol';

/** One probe of the schedule: both directions of one link on one rail. */
export interface PairProbe {
  rail: string;
  /** The client side: forward is a → b. */
  a: string;
  b: string;
  round: number;
  startedAt: number;
  endedAt: number;
  forwardBps: number | null;
  reverseBps: number | null;
  latencyUs: number | null;
  error: string | null;
}

export interface RailInfo {
  name: string;
  kind: RailKind;
  tools: string[];
}

/** A node that could not take part: its agent is gone, or it cannot measure the rail. */
export interface NodeProblem {
  verdict: 'flagged' | 'unreachable';
  reason: string;
}

export interface Analysis {
  rails: RailSummary[];
  links: LinkResult[];
  nodes: NodeVerdict[];
  /** Nodes whose verdict is not ok. */
  flagged: string[];
}

export function analyse(input: {
  nodes: readonly string[];
  rails: readonly RailInfo[];
  probes: readonly PairProbe[];
  problems: ReadonlyMap<string, NodeProblem>;
  threshold: number;
}): Analysis {
  const { problems, threshold } = input;
  const links = input.probes.flatMap((p) => directions(p));
  const rails = input.rails.map((rail) => railSummary(rail, links, threshold));
  const thresholdOf = new Map(rails.map((r) => [r.name, r.thresholdBps]));
  const medianOf = new Map(rails.map((r) => [r.name, r.medianBps]));
  for (const link of links) {
    if (link.error !== null) {
      link.flagged = true;
      link.why = link.error;
      continue;
    }
    const limit = thresholdOf.get(link.rail) ?? null;
    if (limit !== null && link.bandwidthBps !== null && link.bandwidthBps < limit) {
      const median = medianOf.get(link.rail)!;
      link.flagged = true;
      link.why =
        `${formatBitRate(link.bandwidthBps)}, ${Math.round((100 * link.bandwidthBps) / median)} % of the ` +
        `${link.rail} median ${formatBitRate(median)}`;
    }
  }

  // per node: the peers it measured against, and those where either direction is flagged
  const peers = new Map<string, Set<string>>();
  const badPeers = new Map<string, Set<string>>();
  const add = (m: Map<string, Set<string>>, node: string, peer: string) => {
    let s = m.get(node);
    if (!s) m.set(node, (s = new Set()));
    s.add(peer);
  };
  const byNode = new Map<string, LinkResult[]>();
  for (const link of links) {
    for (const end of [link.src, link.dst]) {
      let own = byNode.get(end);
      if (!own) byNode.set(end, (own = []));
      own.push(link);
    }
    if (problems.has(link.src) || problems.has(link.dst)) continue;
    add(peers, link.src, link.dst);
    add(peers, link.dst, link.src);
    if (link.flagged) {
      add(badPeers, link.src, link.dst);
      add(badPeers, link.dst, link.src);
    }
  }
  const culprits = findCulprits(input.nodes, peers, badPeers);

  const nodes = input.nodes.map((node): NodeVerdict => {
    const own = (byNode.get(node) ?? []).filter((l) => l.error === null);
    const bandwidth = spread(own.flatMap((l) => (l.bandwidthBps === null ? [] : [l.bandwidthBps])));
    const latencyUs = spread(own.flatMap((l) => (l.latencyUs === null ? [] : [l.latencyUs])));
    const problem = problems.get(node);
    if (problem) return { node, verdict: problem.verdict, reason: problem.reason, bandwidth, latencyUs };
    const bad = [...(badPeers.get(node) ?? [])];
    const measured = peers.get(node)?.size ?? 0;
    if (bad.length === 0) return { node, verdict: 'ok', reason: null, bandwidth, latencyUs };
    if (culprits.has(node))
      return {
        node,
        verdict: 'flagged',
        reason: `${bad.length} of ${measured} links flagged: ${linkWhy(byNode.get(node) ?? [], node, bad)}`,
        bandwidth,
        latencyUs,
      };
    const explained = bad.filter((p) => culprits.has(p));
    const unexplained = bad.filter((p) => !culprits.has(p));
    const parts = [
      ...(explained.length > 0
        ? [`flagged link${explained.length > 1 ? 's' : ''} to flagged ${explained.join(', ')}`]
        : []),
      ...(unexplained.length > 0
        ? [
            `flagged link${unexplained.length > 1 ? 's' : ''} to ${unexplained.join(', ')}, whose other links are fine ` +
              `(the path between them, not either node): ${linkWhy(byNode.get(node) ?? [], node, unexplained)}`,
          ]
        : []),
    ];
    return { node, verdict: 'ok', reason: parts.join('; '), bandwidth, latencyUs };
  });
  return { rails, links, nodes, flagged: nodes.filter((n) => n.verdict !== 'ok').map((n) => n.node) };
}

/**
 * The nodes most of whose links are flagged, found worst first: a flagged node's links are
 * set aside before the next is judged, so that a slow node does not make its peers look
 * half slow. Nodes tied at the top are flagged together: with two nodes, or one round, a
 * slow pair cannot say which of its ends is slow.
 */
function findCulprits(
  nodes: readonly string[],
  peers: ReadonlyMap<string, ReadonlySet<string>>,
  badPeers: ReadonlyMap<string, ReadonlySet<string>>,
): Set<string> {
  const culprits = new Set<string>();
  for (;;) {
    let top: string[] = [];
    let topScore = 0.5;
    let topBad = 0;
    for (const node of nodes) {
      if (culprits.has(node)) continue;
      const measured = [...(peers.get(node) ?? [])].filter((p) => !culprits.has(p)).length;
      const bad = [...(badPeers.get(node) ?? [])].filter((p) => !culprits.has(p)).length;
      if (measured === 0 || bad === 0) continue;
      const score = bad / measured;
      if (score > topScore || (score === topScore && score > 0.5 && bad > topBad)) {
        top = [node];
        topScore = score;
        topBad = bad;
      } else if (score === topScore && bad === topBad && score > 0.5) top.push(node);
    }
    if (top.length === 0) return culprits;
    for (const n of top) culprits.add(n);
  }
}

function directions(p: PairProbe): LinkResult[] {
  const base = { rail: p.rail, round: p.round, startedAt: p.startedAt, endedAt: p.endedAt, latencyUs: p.latencyUs };
  const one = (src: string, dst: string, bps: number | null): LinkResult => {
    const error = p.error ?? (bps === null ? 'no bandwidth measured in this direction' : null);
    return { ...base, src, dst, bandwidthBps: bps, error, flagged: false, why: null };
  };
  return [one(p.a, p.b, p.forwardBps), one(p.b, p.a, p.reverseBps)];
}

function railSummary(rail: RailInfo, links: readonly LinkResult[], threshold: number): RailSummary {
  const own = links.filter((l) => l.rail === rail.name && l.error === null);
  const medianBps = median(own.flatMap((l) => (l.bandwidthBps === null ? [] : [l.bandwidthBps])));
  const medianLatencyUs = median(own.flatMap((l) => (l.latencyUs === null ? [] : [l.latencyUs])));
  return {
    name: rail.name,
    kind: rail.kind,
    tools: rail.tools,
    medianBps,
    thresholdBps: medianBps === null ? null : medianBps * threshold,
    medianLatencyUs,
  };
}

/** The first flagged direction between `node` and each peer, in words; `links` are the node's. */
function linkWhy(links: readonly LinkResult[], node: string, peers: readonly string[]): string {
  const parts = peers.slice(0, 4).map((peer) => {
    const l = links.find(
      (x) => x.flagged && ((x.src === node && x.dst === peer) || (x.src === peer && x.dst === node)),
    );
    return l ? `${l.src}→${l.dst} ${l.why}` : peer;
  });
  return parts.join('; ') + (peers.length > 4 ? `; and ${peers.length - 4} more` : '');
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function spread(values: readonly number[]): Spread | null {
  if (values.length === 0) return null;
  return { min: Math.min(...values), median: median(values)!, max: Math.max(...values) };
}
