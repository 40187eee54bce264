// Rank counts per node, global rank order, node order and patterns: the pure pieces.
import t from 'tap';
import { assignRanks, rankCounts } from '#planner/layout';
import { exclusiveSizes } from '#planner/cpu-shares';
import { naturalCompare } from '@rankd/protocol/natural-order';
import { globToRegExp } from '#planner/glob';
import { globGroupResolver } from '#planner/select-nodes';
import { formatSpecFlags } from '#planner/errors';

const names = ['a', 'b', 'c'];

t.test('torch exclusive rule: equal shares, remainder to the lowest ranks', async (t) => {
  t.same(exclusiveSizes(112, 3), [38, 37, 37]);
  t.same(exclusiveSizes(10, 4), [3, 3, 2, 2]);
  t.same(exclusiveSizes(8, 8), [1, 1, 1, 1, 1, 1, 1, 1]);
});

t.test('counts without --ranks-per-node: one per node, or -n spread evenly', async (t) => {
  t.same(rankCounts(names, null, {}, false), [1, 1, 1]);
  t.same(rankCounts(names, null, { ntasks: 7 }, false), [3, 2, 2]);
  t.same(rankCounts(names, null, { ntasks: 2 }, false), [1, 1, 0], 'implicit node count: the third node is dropped');
});

t.test('counts with --ranks-per-node: block fills in order, cyclic deals round-robin', async (t) => {
  const cap = () => 4;
  t.same(rankCounts(names, cap, { ranksPerNode: 4 }, false), [4, 4, 4]);
  t.same(rankCounts(names, cap, { ranksPerNode: 4, ntasks: 6 }, false), [4, 2, 0]);
  t.same(rankCounts(names, cap, { ranksPerNode: 4, ntasks: 6, distribution: 'cyclic' }, false), [2, 2, 2]);
  const uneven = (i: number) => [1, 3, 2][i]!;
  t.same(rankCounts(names, uneven, { ranksPerNode: 'numa', ntasks: 5, distribution: 'cyclic' }, false), [1, 2, 2]);
});

t.test("global ranks: block keeps a node's ranks together, cyclic interleaves", async (t) => {
  t.same(assignRanks([2, 2, 1], 'block'), [[0, 1], [2, 3], [4]]);
  t.same(assignRanks([2, 2, 1], 'cyclic'), [[0, 3], [1, 4], [2]]);
  t.same(assignRanks([3, 1], 'cyclic'), [[0, 2, 3], [1]]);
});

t.test('names sort naturally', async (t) => {
  const sorted = ['node10', 'node2', 'node1', 'mlx5_10', 'mlx5_2', 'node02', 'a'].sort(naturalCompare);
  t.same(sorted, ['a', 'mlx5_2', 'mlx5_10', 'node1', 'node2', 'node02', 'node10']);
});

t.test('globs and group patterns', async (t) => {
  t.ok(globToRegExp('mlx5_*').test('mlx5_10'));
  t.notOk(globToRegExp('mlx5_1').test('mlx5_10'), 'a glob without * is exact, unlike NCCL_IB_HCA prefixes');
  t.ok(globToRegExp('irdma-cvl[01]?tf2').test('irdma-cvl12tf2'));
  t.notOk(globToRegExp('irdma-cvl[!1]?tf2').test('irdma-cvl12tf2'));
  t.ok(globToRegExp('a.b').test('a.b'));
  t.notOk(globToRegExp('a.b').test('axb'), 'dots are literal');
  t.same(globGroupResolver('gpu*,!gpu3', ['gpu1', 'gpu3', 'cpu1', 'gpu12']), ['gpu1', 'gpu12']);
  t.same(globGroupResolver('!cpu*', ['gpu1', 'cpu1']), ['gpu1']);
});

t.test('suggestions print as the flags a user would type', async (t) => {
  t.equal(
    formatSpecFlags({ cpusPerRank: 24, commOn: 'cores', nodelist: ['a', 'b'], env: { A: '1' } }),
    '-c 24 --comm-on cores --nodelist a,b --env A=1',
  );
});
