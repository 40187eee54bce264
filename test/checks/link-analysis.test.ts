// What a net check's probes mean (link-analysis.ts), on hand-made probe sets whose answer
// is known: a slow node, a slow path between two good nodes, a pair that cannot say which
// end is slow, failed probes, nodes that could not take part, and the numbers themselves
// (rail medians, thresholds, each node's min/median/max).
import t from 'tap';
import { analyse, median, type NodeProblem, type PairProbe } from '#controller/checks/link-analysis';
import { circleSchedule } from '#controller/checks/round-robin';

const G = 1e9;
const TCP = [{ name: 'tcp', kind: 'tcp' as const, tools: ['iperf3'] }];

/**
 * Every pair of `nodes` in the circle schedule's order, both directions at `rate(a, b)` (the
 * forward, a → b) and `rate(b, a)` (the reverse); `error(a, b)` fails a pair's probe.
 */
function probesOf(
  nodes: readonly string[],
  rate: (src: string, dst: string) => number | null,
  opts: { error?: (a: string, b: string) => string | null; latencyUs?: (a: string, b: string) => number } = {},
): PairProbe[] {
  return circleSchedule(nodes.length).flatMap((round, r) =>
    round.map(([i, j]): PairProbe => {
      const a = nodes[i]!;
      const b = nodes[j]!;
      const error = opts.error?.(a, b) ?? null;
      return {
        rail: 'tcp',
        a,
        b,
        round: r,
        startedAt: 1000 * r,
        endedAt: 1000 * r + 900,
        forwardBps: error ? null : rate(a, b),
        reverseBps: error ? null : rate(b, a),
        latencyUs: error ? null : (opts.latencyUs?.(a, b) ?? 20),
        error,
      };
    }),
  );
}

const six = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
const run = (
  nodes: readonly string[],
  probes: PairProbe[],
  problems: Map<string, NodeProblem> = new Map(),
  threshold = 0.8,
) => analyse({ nodes, rails: TCP, probes, problems, threshold });
const verdicts = (a: ReturnType<typeof run>) => Object.fromEntries(a.nodes.map((n) => [n.node, n.verdict]));
const flaggedPairs = (a: ReturnType<typeof run>) =>
  a.links
    .filter((l) => l.flagged)
    .map((l) => `${l.src}→${l.dst}`)
    .sort();

t.test('one slow node: only it is flagged, its peers are ok and say the flagged node explains them', async (t) => {
  const a = run(
    six,
    probesOf(six, (s, d) => (s === 'n4' || d === 'n4' ? 0.2 * G : 10 * G)),
  );
  t.same(a.flagged, ['n4']);
  t.same(verdicts(a), { n1: 'ok', n2: 'ok', n3: 'ok', n4: 'flagged', n5: 'ok', n6: 'ok' });
  t.same(
    flaggedPairs(a),
    six
      .filter((n) => n !== 'n4')
      .flatMap((n) => [`${n}→n4`, `n4→${n}`])
      .sort(),
    "exactly n4's ten directions are flagged",
  );
  const n4 = a.nodes.find((n) => n.node === 'n4')!;
  t.match(n4.reason, /^5 of 5 links flagged: /, 'the slow node: how many of its links');
  t.match(n4.reason, /200 Mbit\/s, 2 % of the tcp median 10.0 Gbit\/s/, 'the reason says how slow, against what');
  for (const peer of ['n1', 'n2', 'n3', 'n5', 'n6'])
    t.equal(a.nodes.find((n) => n.node === peer)!.reason, 'flagged link to flagged n4', `${peer}: n4 explains it`);
});

t.test('a slow path between two good nodes: the link is flagged, neither node is', async (t) => {
  const slow = (s: string, d: string) => (s === 'n2' && d === 'n5') || (s === 'n5' && d === 'n2');
  const a = run(
    six,
    probesOf(six, (s, d) => (slow(s, d) ? 0.5 * G : 10 * G)),
  );
  t.same(flaggedPairs(a), ['n2→n5', 'n5→n2'], 'both directions of the slow path');
  t.same(a.flagged, [], 'no node is flagged: draining either would not fix the path');
  t.ok(
    a.nodes.every((n) => n.verdict === 'ok'),
    'every node ok',
  );
  const n2 = a.nodes.find((n) => n.node === 'n2')!;
  t.match(n2.reason, /flagged link to n5, whose other links are fine \(the path between them, not either node\)/);
  t.match(n2.reason, /n[25]→n[52] 500 Mbit\/s, 5 % of the tcp median 10.0 Gbit\/s/);
  t.equal(a.nodes.find((n) => n.node === 'n1')!.reason, null, 'an uninvolved node has nothing to say');
});

t.test('two nodes: a slow pair cannot say which end is slow, so both are flagged', async (t) => {
  // the rail's median is the mean of this link's two directions: the slow one is under 80 % of it
  const a = run(
    ['x', 'y'],
    probesOf(['x', 'y'], (s) => (s === 'x' ? 1 * G : 10 * G)),
    new Map(),
    0.8,
  );
  t.same(flaggedPairs(a), ['x→y'], 'the slow direction is below 80 % of the median of 1 and 10 Gbit/s');
  t.same(a.flagged, ['x', 'y'], 'tied at the top: both flagged');
  t.match(a.nodes[0]!.reason, /^1 of 1 links flagged: x→y 1.00 Gbit\/s, 18 % of the tcp median 5.50 Gbit\/s$/);
});

t.test('failed probes are flagged links with the error as the reason', async (t) => {
  const nodes = ['a', 'b', 'c', 'd'];
  const a = run(
    nodes,
    probesOf(nodes, () => 5 * G, {
      error: (x, y) => ([x, y].sort().join() === 'b,c' ? 'b → c: iperf3: unable to connect' : null),
    }),
  );
  t.same(flaggedPairs(a), ['b→c', 'c→b'], 'both directions of the failed probe');
  for (const l of a.links.filter((x) => x.flagged)) {
    t.equal(l.why, 'b → c: iperf3: unable to connect', 'why is the error');
    t.equal(l.bandwidthBps, null, 'no bandwidth for a failed probe');
  }
  t.same(a.flagged, [], 'one failed link of three is the path, not a node');
  t.equal(a.rails[0]!.medianBps, 5 * G, 'a failed probe does not enter the median');
  t.same(a.nodes.find((n) => n.node === 'b')!.bandwidth, { min: 5 * G, median: 5 * G, max: 5 * G });
});

t.test('a probe that measured one direction only: the other is a flagged link with a reason', async (t) => {
  const probes = probesOf(['a', 'b', 'c'], () => 4 * G);
  const ab = probes.find((p) => p.a === 'a' && p.b === 'b')!;
  ab.reverseBps = null;
  const r = run(['a', 'b', 'c'], probes);
  const ba = r.links.find((l) => l.src === 'b' && l.dst === 'a')!;
  t.ok(ba.flagged);
  t.equal(ba.why, 'no bandwidth measured in this direction');
  t.notOk(r.links.find((l) => l.src === 'a' && l.dst === 'b')!.flagged, 'the measured direction stands');
});

t.test("nodes that could not take part do not count against their peers' links", async (t) => {
  const nodes = ['a', 'b', 'c', 'd'];
  const problems = new Map<string, NodeProblem>([
    ['c', { verdict: 'unreachable', reason: 'unreachable during the check: agent c is not connected' }],
    ['d', { verdict: 'flagged', reason: 'd could not serve iperf3: iperf3 is not installed (apt install iperf3)' }],
  ]);
  const sitting = (x: string, y: string) =>
    problems.has(x) ? `not probed: ${x} is flagged` : problems.has(y) ? `not probed: ${y} is flagged` : null;
  const a = run(
    nodes,
    probesOf(nodes, () => 9 * G, { error: sitting }),
    problems,
  );
  // without the exclusion a and b would each have 2 failed links of 3 and be flagged
  t.same(verdicts(a), { a: 'ok', b: 'ok', c: 'unreachable', d: 'flagged' });
  t.equal(a.nodes.find((n) => n.node === 'a')!.reason, null, 'a has no finding of its own');
  t.equal(a.nodes.find((n) => n.node === 'c')!.reason, problems.get('c')!.reason, 'the problem is the reason');
  t.equal(a.nodes.find((n) => n.node === 'd')!.reason, problems.get('d')!.reason);
  t.same(a.flagged, ['c', 'd'], 'both problem nodes are not ok');
  t.equal(a.rails[0]!.medianBps, 9 * G, 'only the one measured link is in the median');
  t.same(a.nodes.find((n) => n.node === 'c')!.bandwidth, null, 'no measured link: no spread');
});

t.test('rail medians and thresholds, per rail', async (t) => {
  const nodes = ['a', 'b', 'c'];
  const rates: Record<string, number> = { 'a→b': 1, 'b→a': 2, 'a→c': 3, 'c→a': 4, 'b→c': 5, 'c→b': 6 };
  const tcp = probesOf(nodes, (s, d) => rates[`${s}→${d}`]! * G, { latencyUs: (x) => (x === 'a' ? 10 : 30) });
  const rdma = tcp.map((p) => ({
    ...p,
    rail: 'mlx5_0',
    forwardBps: p.forwardBps! * 100,
    reverseBps: p.reverseBps! * 100,
    latencyUs: 2,
  }));
  const r = analyse({
    nodes,
    rails: [...TCP, { name: 'mlx5_0', kind: 'rdma', tools: ['ib_write_bw', 'ib_write_lat'] }],
    probes: [...tcp, ...rdma],
    problems: new Map(),
    threshold: 0.5,
  });
  t.same(r.rails, [
    { name: 'tcp', kind: 'tcp', tools: ['iperf3'], medianBps: 3.5 * G, thresholdBps: 1.75 * G, medianLatencyUs: 10 },
    {
      name: 'mlx5_0',
      kind: 'rdma',
      tools: ['ib_write_bw', 'ib_write_lat'],
      medianBps: 350 * G,
      thresholdBps: 175 * G,
      medianLatencyUs: 2,
    },
  ]);
  // 1 G < 1.75 G on tcp, and 100 G < 175 G on mlx5_0: each against its own rail's median
  t.same(
    r.links.filter((l) => l.flagged).map((l) => `${l.rail} ${l.src}→${l.dst}`),
    ['tcp a→b', 'mlx5_0 a→b'],
  );
  t.equal(median([]), null);
  t.equal(median([5, 1, 3]), 3);
  t.equal(median([4, 1, 3, 2]), 2.5);
});

t.test("each node's min, median and max over its own measured directions", async (t) => {
  const nodes = ['a', 'b', 'c'];
  const rates: Record<string, number> = { 'a→b': 1, 'b→a': 2, 'a→c': 3, 'c→a': 4, 'b→c': 5, 'c→b': 6 };
  const r = run(
    nodes,
    probesOf(nodes, (s, d) => rates[`${s}→${d}`]! * G, { latencyUs: (x, y) => ({ ab: 10, ac: 20, bc: 40 })[x + y]! }),
    new Map(),
    0.05,
  );
  const by = Object.fromEntries(r.nodes.map((n) => [n.node, { bandwidth: n.bandwidth, latencyUs: n.latencyUs }]));
  t.same(by, {
    a: { bandwidth: { min: 1 * G, median: 2.5 * G, max: 4 * G }, latencyUs: { min: 10, median: 15, max: 20 } },
    b: { bandwidth: { min: 1 * G, median: 3.5 * G, max: 6 * G }, latencyUs: { min: 10, median: 25, max: 40 } },
    c: { bandwidth: { min: 3 * G, median: 4.5 * G, max: 6 * G }, latencyUs: { min: 20, median: 30, max: 40 } },
  });
});
