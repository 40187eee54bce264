// The site's default CPUs per rank (issue 25, item 5) in the planner: `share` divides each
// node among its ranks, N gives each rank N cores when the spec has no -c, -c always wins,
// --exclusive divides its nodes whatever the default, and the map says which rule applied.
// Also the line `rankd run` and `rankd plan` print from it, plurals included.
import t from 'tap';
import { allocationOf, PlanError, planRankMap, withHolds } from '@rankd/planner';
import { PlanErrorCode, formatCpuList, type PlacementSpec, type RankMap } from '@rankd/protocol';
import { cpuHoldLine } from '@rankd/protocol/cpu-hold';
import { seed002NoHt } from '../helpers/machines.js';
import { uniform } from './cluster.js';

// 2 × 28 cores, no hyperthreads
const nodes = uniform(t.testdir(), seed002NoHt, 2, 'clx', '10.3.0');
const factsOf = (name: string) => nodes.find((n) => n.name === name)!.facts;

function plan(spec: PlacementSpec, site?: 'share' | number): RankMap {
  const map = planRankMap(nodes, spec, site === undefined ? {} : { defaultCpusPerRank: site });
  return withHolds(map, allocationOf(map, spec, factsOf), factsOf);
}
const cpuLists = (map: RankMap) => map.ranks.map((r) => formatCpuList(r.cpus));

t.test('share (the default): one rank holds its whole node', async (t) => {
  for (const map of [plan({ ntasks: 1 }), plan({ ntasks: 1 }, 'share')]) {
    t.same(cpuLists(map), ['0-55']);
    t.same(map.cpuPolicy, { site: 'share', applied: 'share', cpusPerRank: null });
    t.same(map.nodes[0]!.cores, { held: 56, of: 56 });
    t.equal(cpuHoldLine(map), 'holds 56 of 56 cores on clx1 (share: -c 1 to ask for fewer)');
  }
});

t.test('N: each rank gets N cores when the spec has no -c', async (t) => {
  const one = plan({ ntasks: 1 }, 1);
  t.same(cpuLists(one), ['0']);
  t.same(one.cpuPolicy, { site: 1, applied: 'site', cpusPerRank: 1 });
  t.same(one.nodes[0]!.cores, { held: 1, of: 56 });
  t.equal(cpuHoldLine(one), 'holds 1 of 56 cores on clx1 (site default 1 per rank: up to -c 56 for more)');
  t.equal(one.ranks[0]!.env['OMP_NUM_THREADS'], '1', 'the rank environment follows the binding');

  const four = plan({ ntasks: 4, nodes: 1 }, 2);
  t.same(cpuLists(four), ['0-1', '14-15', '28-29', '42-43'], '2 cores each, spread over the sockets as shares are');
  t.equal(
    cpuHoldLine(four, 'would hold'),
    'would hold 8 of 56 cores on clx1 (site default 2 per rank: up to -c 14 for more)',
  );
});

t.test('-c wins over either default; --exclusive divides its nodes whatever the default', async (t) => {
  for (const site of ['share', 4] as const) {
    const map = plan({ ntasks: 1, cpusPerRank: 3 }, site);
    t.same(cpuLists(map), ['0-2'], `site ${site}`);
    t.same(map.cpuPolicy, { site, applied: 'asked', cpusPerRank: 3 });
    t.equal(cpuHoldLine(map), 'holds 3 of 56 cores on clx1 (-c 3 per rank)');
  }
  const excl = plan({ ntasks: 2, nodes: 1, exclusive: true }, 1);
  t.same(cpuLists(excl), ['0-27', '28-55']);
  t.same(excl.cpuPolicy, { site: 1, applied: 'exclusive', cpusPerRank: null });
  t.equal(cpuHoldLine(excl), 'holds 56 of 56 cores on clx1 (--exclusive: the whole node)');
  const shared = plan({ ntasks: 1, share: true }, 1);
  t.equal(cpuHoldLine(shared), 'holds 0 of 56 cores on clx1 (--share: it overlaps other jobs)');
});

t.test(
  'a site default larger than a rank can have says it is the site default, and offers a -c to paste',
  async (t) => {
    const err = t.throws(() =>
      planRankMap(nodes, { ntasks: 2, nodes: 1, ranksPerNode: 'numa' }, { defaultCpusPerRank: 30 }),
    ) as PlanError;
    t.equal(err.code, PlanErrorCode.TooManyCpus);
    t.match(
      err.message,
      /the site default of 30 cores per rank \(rankd controller --default-cpus-per-rank\) asks for more compute cores than local rank 0's share has 28 allowed cores; nearest feasible spec: -c 28/,
    );
  },
);

t.test('the hold line: plurals, several nodes grouped and bounded, old maps without counts', async (t) => {
  const base = plan({ ntasks: 1 }, 1);
  const node = (name: string, held: number, of: number, ranks: number[]) => ({
    ...base.nodes[0]!,
    name,
    ranks,
    cores: { held, of },
  });
  t.equal(
    cpuHoldLine({ ...base, nodes: [node('tiny', 1, 1, [0])] }),
    'holds 1 of 1 core on tiny (site default 1 per rank)',
    'one core, and no "more" to offer',
  );
  t.equal(
    cpuHoldLine({
      ...base,
      cpuPolicy: { site: 'share', applied: 'share', cpusPerRank: null },
      nodes: [node('a', 2, 2, [0, 1])],
    }),
    'holds 2 of 2 cores on a (share)',
    'one core per rank already: no -c 1 hint',
  );
  const many = Array.from({ length: 7 }, (_, i) => node(`n${i + 1}`, 1, 64, [i]));
  t.equal(
    cpuHoldLine({
      ...base,
      nodes: [...many, node('big', 1, 128, [7]), node('odd1', 2, 8, [8]), node('odd2', 3, 8, [9])],
    }),
    'holds 1 of 64 cores on n1,n2,n3,n4,… (7 nodes), 1 of 128 cores on big, 2 of 8 cores on odd1, and more on 1 other node (site default 1 per rank: up to -c 8 for more)',
  );
  const { cpuPolicy: _p, ...old } = base;
  t.equal(cpuHoldLine(old), null, 'a map stored before the policy existed has no line');
  t.equal(
    cpuHoldLine({ ...base, nodes: base.nodes.map(({ cores: _c, ...n }) => n) }),
    null,
    'nor one without hold counts',
  );
});
