// One natural order of names for the facts and the planner. The facts reader and the
// planner used to carry a function each; they disagreed where a name holds `_` or a
// number with a leading zero (eth_0 and node_1 came first in one and last in the other,
// node01 and node1 swapped). Both now import @rankd/protocol/natural-order, which answers
// as ICU's numeric collation (test/facts/natural-order.test.ts); here the real planner
// picks nodes with exactly such names, in that order.
import t from 'tap';
import { planRankMap } from '@rankd/planner';
import { naturalCompare } from '@rankd/protocol/natural-order';
import { seed001CloudVm } from '../helpers/machines.js';
import { cluster } from './cluster.js';

const collator = new Intl.Collator('en', { numeric: true });
const NAMES = ['node10', 'node_1', 'node1', 'node01', 'node2', 'eth_0', 'eth0', 'eth-0', 'mlx5_10', 'mlx5_2'];

t.test('the names that exposed the two orders sort as ICU numeric collation does', async (t) => {
  t.same([...NAMES].sort(naturalCompare), [...NAMES].sort(collator.compare));
});

t.test('the planner takes nodes in that same order', async (t) => {
  const nodes = cluster(
    t.testdir(),
    // handed over in no particular order: the planner orders them itself
    NAMES.map((name, i) => ({ name, address: `192.168.0.${i + 1}`, machine: seed001CloudVm(i + 1) })),
  );
  const map = planRankMap(nodes, { nodes: NAMES.length, ranksPerNode: 1 });
  t.same(
    map.ranks.map((r) => r.node),
    [...NAMES].sort(collator.compare),
    'rank r is on the r-th node in natural order',
  );
  const firstThree = planRankMap(nodes, { nodes: 3, ranksPerNode: 1 });
  t.same(
    firstThree.ranks.map((r) => r.node),
    [...NAMES].sort(collator.compare).slice(0, 3),
    '-N 3 keeps the first three of that order',
  );
});
