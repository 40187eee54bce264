// Every impossible spec fails with its stable code and one clear message naming the
// node and the reason, plus the nearest feasible spec when one is obvious.
import t, { type Test } from 'tap';
import { PlanError, formatSpecFlags, planRankMap, type PlannerNode } from '@rankd/planner';
import { PlanErrorCode, type PlacementSpec } from '@rankd/protocol';
import { cgroupRestricted, epycNps4Gpu8, seed000Spr, seed002NoHt, seed004RocePod } from '../helpers/machines.js';
import { cluster, uniform } from './cluster.js';

const dir = t.testdir();
const spr = uniform(`${dir}/spr`, seed000Spr, 2, 'node', '10.1.0');
const seen = new Set<string>();

function fails(t: Test, nodes: PlannerNode[], spec: PlacementSpec, code: string, message: RegExp | string): PlanError {
  const err = t.throws(() => planRankMap(nodes, spec), PlanError) as PlanError;
  t.equal(err.code, code, `${formatSpecFlags(spec)} → ${code}`);
  if (typeof message === 'string') t.equal(err.message, message);
  else t.match(err.message, message);
  seen.add(err.code);
  return err;
}

t.test('node selection', async (t) => {
  fails(t, spr, { group: 'gpu*' }, PlanErrorCode.NoNodes, 'no ready node matches --group gpu*');
  fails(t, [], {}, PlanErrorCode.NoNodes, 'no ready node to plan on');
  fails(
    t,
    spr,
    { nodelist: ['node1', 'node7'] },
    PlanErrorCode.UnknownNode,
    'node node7: not a ready node (ready: node1,node2)',
  );
  const n = fails(
    t,
    spr,
    { nodes: 3 },
    PlanErrorCode.NodeCount,
    '-N 3 asks for more nodes than the 2 nodes that match; nearest feasible spec: -N 2',
  );
  t.same(n.suggestion, { nodes: 2 });
  fails(
    t,
    spr,
    { nodes: 2, ntasks: 1 },
    PlanErrorCode.NodeCount,
    '-n 1 leaves 1 of the 2 nodes without a rank; nearest feasible spec: -N 1',
  );
  fails(
    t,
    spr,
    { nodelist: ['node2', 'node1'], ntasks: 2, ranksPerNode: 2 },
    PlanErrorCode.NodeCount,
    /leaves node1 without a rank; nearest feasible spec: --nodelist node2$/,
  );
});

t.test('a group pattern picks nodes; without -N every match is used', async (t) => {
  const map = planRankMap(spr, { group: 'node*,!node1' });
  t.same(
    map.nodes.map((n) => n.name),
    ['node2'],
  );
  // an implicit node count shrinks to what -n needs
  t.same(
    planRankMap(spr, { ntasks: 2, ranksPerNode: 2 }).nodes.map((n) => n.name),
    ['node1'],
  );
});

t.test('ranks', async (t) => {
  fails(
    t,
    spr,
    { ntasks: 5, ranksPerNode: 2 },
    PlanErrorCode.TooManyRanks,
    '-n 5 is more than the 4 rank slots of 2 nodes with --ranks-per-node 2; nearest feasible spec: -n 4',
  );
  // -n alone: the suggestion is the -n that fits, not a --ranks-per-node the user never typed
  const one = fails(
    t,
    spr,
    { nodes: 1, ntasks: 113 },
    PlanErrorCode.TooManyRanks,
    'node node1: 113 ranks but only 112 allowed cores (--oversubscribe lets ranks share cores); nearest feasible spec: -n 112',
  );
  t.same(one.suggestion, { ntasks: 112 });
  t.same(
    fails(t, spr, { ntasks: 226 }, PlanErrorCode.TooManyRanks, /nearest feasible spec: -n 224$/).suggestion,
    { ntasks: 224 },
    'the same count on each of 2 nodes',
  );
  fails(
    t,
    spr,
    { ranksPerNode: 113 },
    PlanErrorCode.TooManyRanks,
    'node node1: 113 ranks but only 112 allowed cores (--oversubscribe lets ranks share cores); nearest feasible spec: --ranks-per-node 112',
  );
  // the same spec with --oversubscribe: every rank pinned to one core, neighbours sharing
  const over = planRankMap(spr, { nodes: 1, ranksPerNode: 224, oversubscribe: true });
  t.equal(over.ranks.length, 224);
  t.ok(
    over.ranks.every((r) => r.cpus.length === 1),
    'one CPU per rank',
  );
  t.same(over.ranks[0]!.cpus, over.ranks[1]!.cpus, 'ranks 0 and 1 share a core');
  t.notSame(over.ranks[1]!.cpus, over.ranks[2]!.cpus, 'rank 2 is on the next core');
  t.equal(new Set(over.ranks.map((r) => r.cpus[0])).size, 112, 'every core is used, twice');
  t.match(over.notes.join('\n'), /oversubscribed: 224 ranks on 112 cores, up to 2 ranks per core/);
  t.same(
    planRankMap(spr, { nodes: 1, ranksPerNode: 4, oversubscribe: true }),
    planRankMap(spr, { nodes: 1, ranksPerNode: 4 }),
    'without more ranks than cores the flag changes nothing',
  );
});

t.test('CPUs', async (t) => {
  const err = fails(
    t,
    spr,
    { ranksPerNode: 2, cpusPerRank: 57 },
    PlanErrorCode.TooManyCpus,
    /^node node1: -c 57 asks for more compute cores than local rank 0's share has 56 allowed cores; nearest feasible spec: -c 56$/,
  );
  t.same(err.details, { node: 'node1', suggestion: { cpusPerRank: 56 } });
  fails(
    t,
    spr,
    { ranksPerNode: 2, commWorkers: 57 },
    PlanErrorCode.CommNoRoom,
    /^node node1: 57 comm workers do not fit: local rank 0's share has 56 allowed cores/,
  );
  fails(
    t,
    spr,
    { ranksPerNode: 2, cpusPerRank: 56, commWorkers: 1, commOn: 'cores' },
    PlanErrorCode.CommNoRoom,
    /nearest feasible spec: -c 55$/,
  );
  const empty = cluster(`${dir}/empty`, [
    { name: 'empty', address: null, machine: { ...seed002NoHt(1), offline: [] } },
  ]);
  // a node whose facts allow no CPU at all (an empty cpuset)
  empty[0]!.facts.cpu.allowed = [];
  fails(t, empty, {}, PlanErrorCode.NoCpus, /^node empty: no allowed CPU/);
});

t.test('NICs', async (t) => {
  fails(
    t,
    spr,
    { nic: 'mlx5_*' },
    PlanErrorCode.NicNoMatch,
    'node node1: --nic mlx5_* matches no RDMA device (present: irdma-cvl01tf2,irdma-cvl02tf2,irdma-cvl11tf2,irdma-cvl12tf2); nearest feasible spec: --nic irdma-cvl01tf2,irdma-cvl02tf2,irdma-cvl11tf2,irdma-cvl12tf2',
  );
  const down = seed004RocePod(1);
  down.rdma![0]!.ports[0]!.state = 'DOWN';
  const pod = cluster(`${dir}/down`, [{ name: 'pod-1', address: null, machine: down }]);
  fails(
    t,
    pod,
    { nic: 'mlx5_bond_*' },
    PlanErrorCode.NicNoMatch,
    'node pod-1: --nic mlx5_bond_* matches mlx5_bond_0, but no port of it is ACTIVE; nearest feasible spec: --nic none',
  );
  // a pattern that matches on some nodes only is a note; on none, an error
  const mixed = [...spr.slice(0, 1), ...uniform(`${dir}/mixed`, seed004RocePod, 1, 'pod-', '10.5.0')];
  const map = planRankMap(mixed, { nic: 'irdma-*,mlx5_*' });
  t.same(
    map.notes.filter((n) => n.includes('--nic')),
    [
      'node node1: --nic pattern mlx5_* matches no device here',
      'node pod-1: --nic pattern irdma-* matches no device here',
    ],
  );
  fails(
    t,
    spr,
    { nic: 'irdma-*,mlx5_*' },
    PlanErrorCode.NicNoMatch,
    '--nic pattern mlx5_* matches no RDMA device on any node',
  );
});

t.test('GPUs', async (t) => {
  const dgx = uniform(`${dir}/dgx`, epycNps4Gpu8, 1, 'dgx', null);
  fails(
    t,
    dgx,
    { ranksPerNode: 'gpu', ntasks: 9 },
    PlanErrorCode.TooManyGpus,
    '-n 9 is more than the 8 GPUs of 1 node with --ranks-per-node gpu; nearest feasible spec: -n 8',
  );
});

t.test('contradictions', async (t) => {
  fails(
    t,
    spr,
    { env: { SLURM_PROCID: '0' } },
    PlanErrorCode.BadSpec,
    /--env SLURM_PROCID: rankd never exports SLURM_\*/,
  );
  fails(
    t,
    spr,
    { nodelist: ['node1'], group: 'node*' },
    PlanErrorCode.BadSpec,
    '--nodelist and --group both select nodes; give one',
  );
  fails(
    t,
    spr,
    { ranksPerNode: 'gpu', gpusPerRank: 2 },
    PlanErrorCode.BadSpec,
    /--gpus-per-rank 2 contradicts it; nearest feasible spec: --gpus-per-rank 1$/,
  );
  fails(t, spr, { nodelist: ['node1', 'node1'] }, PlanErrorCode.BadSpec, '--nodelist names node1 twice');
});

t.test('every plan error code is exercised above', async (t) => {
  t.same([...seen].sort(), Object.values(PlanErrorCode).sort());
});

t.test('the cgroup node fails where its cpuset runs out, not where the hardware does', async (t) => {
  const shared = uniform(`${dir}/cg`, cgroupRestricted, 1, 'shared', null);
  const err = t.throws(() => planRankMap(shared, { ranksPerNode: 'numa', cpusPerRank: 10 })) as PlanError;
  t.match(err.message, /local rank 1's share has 9 allowed cores/);
});
