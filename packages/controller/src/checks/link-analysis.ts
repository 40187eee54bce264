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
  const links = directions(input.probes);
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
  const table = linkTable(input.nodes, links, problems);
  const culprits = findCulprits(input.nodes, table);
  const nodes = input.nodes.map((node) => verdictOf(node, table, problems.get(node), culprits));
  return { rails, links, nodes, flagged: nodes.filter((n) => n.verdict !== 'ok').map((n) => n.node) };
}

/**
 * The links of a check by node, and who measured whom: pairs where neither end sits out
 * (a problem). A full check of 512 nodes has 261,632 links, each at two nodes: walking them
 * once, in order, and keeping each node's share in flat typed arrays (its slice of link
 * indices, bandwidths and latencies) costs a fraction of visiting every node's links again,
 * scattered over memory; who measured whom is a matrix of bytes by node index.
 */
interface LinkTable {
  /** Every link with the node at either end, failed ones too, in the order of the check's links. */
  linksOf(node: string): LinkResult[];
  /** The bandwidths and the latencies of the node's links that did not fail, in scratch arrays of their own. */
  bandwidthsOf(node: string): Float64Array;
  latenciesOf(node: string): Float64Array;
  /** How many distinct peers the node measured against. */
  measuredCount(node: string): number;
  measuredPair(a: string, b: string): boolean;
  /** The peers where either direction is flagged, in the order the links list them. */
  badPeers(node: string): ReadonlySet<string>;
}

function linkTable(
  nodes: readonly string[],
  links: readonly LinkResult[],
  problems: ReadonlyMap<string, NodeProblem>,
): LinkTable {
  const indexOf = new Map<string, number>();
  const id = (name: string): number => {
    let i = indexOf.get(name);
    if (i === undefined) indexOf.set(name, (i = indexOf.size));
    return i;
  };
  for (const node of nodes) id(node);
  const src = new Int32Array(links.length);
  const dst = new Int32Array(links.length);
  for (let k = 0; k < links.length; k++) {
    src[k] = id(links[k]!.src);
    dst[k] = id(links[k]!.dst);
  }
  const size = indexOf.size;
  // node i's slice of the flat arrays starts at start[i]; each array fills its slices on its own
  const start = new Int32Array(size + 1);
  for (let k = 0; k < links.length; k++) {
    start[src[k]! + 1]!++;
    start[dst[k]! + 1]!++;
  }
  for (let i = 0; i < size; i++) start[i + 1]! += start[i]!;
  const slices = () => ({ values: new Float64Array(2 * links.length), filled: new Int32Array(size) });
  const at = { values: new Int32Array(2 * links.length), filled: new Int32Array(size) };
  const bandwidth = slices();
  const latency = slices();
  const put = (into: { values: Float64Array | Int32Array; filled: Int32Array }, node: number, value: number) => {
    into.values[start[node]! + into.filled[node]!++] = value;
  };

  const sitting = new Uint8Array(size);
  for (const node of problems.keys()) if (indexOf.has(node)) sitting[indexOf.get(node)!] = 1;
  const measured = new Int32Array(size);
  const pairs = new Uint8Array(size * size);
  const bad = new Map<string, Set<string>>();
  const addBad = (node: string, peer: string) => {
    let set = bad.get(node);
    if (!set) bad.set(node, (set = new Set()));
    set.add(peer);
  };
  for (let k = 0; k < links.length; k++) {
    const link = links[k]!;
    const a = src[k]!;
    const b = dst[k]!;
    put(at, a, k);
    put(at, b, k);
    if (link.error === null && link.bandwidthBps !== null) {
      put(bandwidth, a, link.bandwidthBps);
      put(bandwidth, b, link.bandwidthBps);
    }
    if (link.error === null && link.latencyUs !== null) {
      put(latency, a, link.latencyUs);
      put(latency, b, link.latencyUs);
    }
    if (sitting[a] || sitting[b]) continue;
    if (pairs[a * size + b] === 0) {
      pairs[a * size + b] = pairs[b * size + a] = 1;
      measured[a]!++;
      if (b !== a) measured[b]!++;
    }
    if (link.flagged) {
      addBad(link.src, link.dst);
      addBad(link.dst, link.src);
    }
  }
  /** Node's slice of a flat array that `filled` fills; an unknown node has none. */
  const range = (node: string, filled: Int32Array): [number, number] => {
    const i = indexOf.get(node);
    return i === undefined ? [0, 0] : [start[i]!, start[i]! + filled[i]!];
  };
  const none = new Set<string>();
  return {
    linksOf: (node) => Array.from(at.values.subarray(...range(node, at.filled)), (k) => links[k]!),
    bandwidthsOf: (node) => bandwidth.values.slice(...range(node, bandwidth.filled)),
    latenciesOf: (node) => latency.values.slice(...range(node, latency.filled)),
    measuredCount: (node) => measured[indexOf.get(node) ?? -1] ?? 0,
    measuredPair: (x, y) => {
      const i = indexOf.get(x);
      const j = indexOf.get(y);
      return i !== undefined && j !== undefined && pairs[i * size + j] === 1;
    },
    badPeers: (node) => bad.get(node) ?? none,
  };
}

function verdictOf(
  node: string,
  table: LinkTable,
  problem: NodeProblem | undefined,
  culprits: ReadonlySet<string>,
): NodeVerdict {
  const bandwidth = spread(table.bandwidthsOf(node));
  const latencyUs = spread(table.latenciesOf(node));
  if (problem) return { node, verdict: problem.verdict, reason: problem.reason, bandwidth, latencyUs };
  const bad = [...table.badPeers(node)];
  if (bad.length === 0) return { node, verdict: 'ok', reason: null, bandwidth, latencyUs };
  if (culprits.has(node))
    return {
      node,
      verdict: 'flagged',
      reason: `${bad.length} of ${table.measuredCount(node)} links flagged: ${linkWhy(table.linksOf(node), node, bad)}`,
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
            `(the path between them, not either node): ${linkWhy(table.linksOf(node), node, unexplained)}`,
        ]
      : []),
  ];
  return { node, verdict: 'ok', reason: parts.join('; '), bandwidth, latencyUs };
}

/**
 * The nodes most of whose links are flagged, found worst first: a flagged node's links are
 * set aside before the next is judged, so that a slow node does not make its peers look
 * half slow. Nodes tied at the top are flagged together: with two nodes, or one round, a
 * slow pair cannot say which of its ends is slow.
 */
function findCulprits(nodes: readonly string[], table: LinkTable): Set<string> {
  const culprits = new Set<string>();
  for (;;) {
    let top: string[] = [];
    let topScore = 0.5;
    let topBad = 0;
    for (const node of nodes) {
      if (culprits.has(node)) continue;
      // culprits are few and a node's peers many: count the culprits among its peers
      let measured = table.measuredCount(node);
      let bad = 0;
      for (const peer of table.badPeers(node)) if (!culprits.has(peer)) bad++;
      for (const c of culprits) if (table.measuredPair(node, c)) measured--;
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

function directions(probes: readonly PairProbe[]): LinkResult[] {
  const links: LinkResult[] = [];
  for (const p of probes) links.push(direction(p, p.a, p.b, p.forwardBps), direction(p, p.b, p.a, p.reverseBps));
  return links;
}

/**
 * Each link is written out as one object literal, not spread from a shared base: V8 builds a
 * spread-and-extended object in dictionary mode, and at 261,632 links (512 nodes) that made
 * building them, and every later pass over them, some 50 times slower.
 */
function direction(p: PairProbe, src: string, dst: string, bps: number | null): LinkResult {
  return {
    rail: p.rail,
    round: p.round,
    startedAt: p.startedAt,
    endedAt: p.endedAt,
    latencyUs: p.latencyUs,
    src,
    dst,
    bandwidthBps: bps,
    error: p.error ?? (bps === null ? 'no bandwidth measured in this direction' : null),
    flagged: false,
    why: null,
  };
}

function railSummary(rail: RailInfo, links: readonly LinkResult[], threshold: number): RailSummary {
  const bandwidths = new Float64Array(links.length);
  const latencies = new Float64Array(links.length);
  let nb = 0;
  let nl = 0;
  for (let k = 0; k < links.length; k++) {
    const l = links[k]!;
    if (l.rail !== rail.name || l.error !== null) continue;
    if (l.bandwidthBps !== null) bandwidths[nb++] = l.bandwidthBps;
    if (l.latencyUs !== null) latencies[nl++] = l.latencyUs;
  }
  const medianBps = middleOf(bandwidths.subarray(0, nb));
  return {
    name: rail.name,
    kind: rail.kind,
    tools: rail.tools,
    medianBps,
    thresholdBps: medianBps === null ? null : medianBps * threshold,
    medianLatencyUs: middleOf(latencies.subarray(0, nl)),
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
  return middleOf(Float64Array.from(values));
}

function spread(values: Float64Array): Spread | null {
  if (values.length === 0) return null;
  let min = values[0]!;
  let max = values[0]!;
  for (let i = 1; i < values.length; i++) {
    if (values[i]! < min) min = values[i]!;
    if (values[i]! > max) max = values[i]!;
  }
  return { min, median: middleOf(values)!, max };
}

/**
 * The median, by selection rather than a sort: a rail of 512 nodes has 261,632 values, and
 * each node's 1,022. Reorders `values`. Of an even count, the mean of the middle two.
 */
function middleOf(values: Float64Array): number | null {
  const n = values.length;
  if (n === 0) return null;
  const upper = select(values, n >> 1);
  if (n % 2 === 1) return upper;
  // select leaves every value before the upper middle no larger than it: the lower middle is their largest
  let lower = values[0]!;
  for (let i = 1; i < n >> 1; i++) if (values[i]! > lower) lower = values[i]!;
  return (lower + upper) / 2;
}

/**
 * The k-th smallest value (from 0), by Hoare's selection: linear on average. Rearranges
 * `values` so that none before index k is larger than it and none after is smaller.
 */
function select(values: Float64Array, k: number): number {
  let lo = 0;
  let hi = values.length - 1;
  while (lo < hi) {
    const pivot = values[(lo + hi) >> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (values[i]! < pivot) i++;
      while (values[j]! > pivot) j--;
      if (i <= j) {
        const t = values[i]!;
        values[i++] = values[j]!;
        values[j--] = t;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return values[k]!;
  }
  return values[k]!;
}
