// A node whose cgroup cpuset allows 12 whole cores on socket 0 (4-15 + siblings 36-47),
// 8 whole cores on socket 1 (20-27 + 52-59) and one lone thread of core 16; its only
// RDMA port is on socket 1. Only allowed cores are split, by sibling sets.
import t from 'tap';
import { PlanError, planRankMap } from '@rankd/planner';
import { PlanErrorCode, formatCpuList } from '@rankd/protocol';
import { cgroupRestricted } from '../helpers/machines.js';
import { uniform } from './cluster.js';

const nodes = uniform(t.testdir(), cgroupRestricted, 1, 'shared', '10.9.1');

t.test('the facts see the cpuset', async (t) => {
  t.equal(formatCpuList(nodes[0]!.facts.cpu.allowed), '4-16,20-27,36-47,52-59');
});

t.test('2 ranks: one per socket, each over its allowed cores only', async (t) => {
  const map = planRankMap(nodes, { ranksPerNode: 2, commWorkers: 1 });
  t.same(
    map.ranks.map((r) => [formatCpuList(r.cpus), formatCpuList(r.commCpus), r.memNodes]),
    [
      ['4-15', '47', [0]],
      // core 16 has one allowed thread: it computes, and the worker sits on core 27's sibling
      ['16,20-27', '59', [1]],
    ],
  );
});

t.test('a rank on the socket without an RDMA port takes the nearest one, and says so', async (t) => {
  const map = planRankMap(nodes, { ranksPerNode: 2 });
  t.same(
    map.ranks.map((r) => r.nics.map((n) => n.device)),
    [['mlx5_0'], ['mlx5_0']],
  );
  t.same(map.notes, ['node shared1: no RDMA device on NUMA node 0; took the nearest: mlx5_0']);
});

t.test('-c larger than a share names the node, the rank and the fix', async (t) => {
  const err = t.throws(() => planRankMap(nodes, { ranksPerNode: 2, cpusPerRank: 10 })) as PlanError;
  t.equal(err.code, PlanErrorCode.TooManyCpus);
  t.equal(
    err.message,
    "node shared1: -c 10 asks for more compute cores than local rank 1's share has 9 allowed cores " +
      "(the cgroup's cpuset allows CPUs 4-16,20-27,36-47,52-59 of CPUs 0-63); nearest feasible spec: -c 9",
  );
});

t.test('--ht all leaves no sibling free for the workers', async (t) => {
  const err = t.throws(() => planRankMap(nodes, { ranksPerNode: 2, ht: 'all', commWorkers: 1 })) as PlanError;
  t.equal(err.code, PlanErrorCode.CommNoRoom);
  t.same(err.suggestion, { cpusPerRank: 11 });
  const fixed = planRankMap(nodes, { ranksPerNode: 2, ht: 'all', commWorkers: 1, cpusPerRank: 8 });
  t.equal(formatCpuList(fixed.ranks[0]!.cpus), '4-11,36-43');
  t.equal(formatCpuList(fixed.ranks[0]!.commCpus), '47');
});

t.test('more ranks than allowed cores', async (t) => {
  const err = t.throws(() => planRankMap(nodes, { ranksPerNode: 22 })) as PlanError;
  t.equal(err.code, PlanErrorCode.TooManyRanks);
  t.equal(
    err.message,
    "node shared1: 22 ranks but only 21 allowed cores (the cgroup's cpuset allows CPUs 4-16,20-27,36-47,52-59 " +
      'of CPUs 0-63; --oversubscribe lets ranks share cores); nearest feasible spec: --ranks-per-node 21',
  );
});

t.test("memory binds inside cpuset.mems, and says so when that moves it off the rank's node", async (t) => {
  const machine = cgroupRestricted(2);
  machine.cgroup = { ...machine.cgroup!, mems: '0' };
  const memsLimited = uniform(t.testdir(), () => machine, 1, 'shared', null);
  t.same(memsLimited[0]!.facts.numa.allowed, [0]);
  const map = planRankMap(memsLimited, { ranksPerNode: 2 });
  t.same(
    map.ranks.map((r) => r.memNodes),
    [[0], [0]],
  );
  t.match(
    map.notes.join('\n'),
    /local rank 1: cpuset mems \(0\) exclude NUMA node 1 of the rank's CPUs; memory binds to the allowed nodes/,
  );
  t.same(
    planRankMap(memsLimited, { ranksPerNode: 2, memBind: 'none' }).ranks.map((r) => r.memNodes),
    [[], []],
  );
});
