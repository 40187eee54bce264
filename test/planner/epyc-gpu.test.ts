// An 8-GPU, 8-HCA EPYC node in NPS4: one rank per GPU. GPU pairs sit on NUMA nodes
// 3, 1, 7 and 5; each rank takes half of its GPU's NUMA node and the HCA paired with
// its GPU.
import t from 'tap';
import { PlanError, planRankMap } from '@rankd/planner';
import { PlanErrorCode, formatCpuList } from '@rankd/protocol';
import { epycNps4Gpu8, seed002NoHt } from '../helpers/machines.js';
import { cluster, uniform } from './cluster.js';

const nodes = uniform(t.testdir(), epycNps4Gpu8, 2, 'dgx', '10.4.0');

t.test('--ppn gpu: rank i owns GPU i, its HCA and half of its NUMA node', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 'gpu' });
  t.same(
    map.ranks.map((r) => [
      r.rank,
      r.gpus,
      r.memNodes,
      formatCpuList(r.cpus),
      r.nics.map((n) => `${n.device}:${n.port}`),
    ]),
    [
      // NUMA node 3 is cores 48-63 of package 0
      [0, [0], [3], '48-55', ['mlx5_0:1']],
      [1, [1], [3], '56-63', ['mlx5_1:1']],
      [2, [2], [1], '16-23', ['mlx5_2:1']],
      [3, [3], [1], '24-31', ['mlx5_3:1']],
      [4, [4], [7], '112-119', ['mlx5_4:1']],
      [5, [5], [7], '120-127', ['mlx5_5:1']],
      [6, [6], [5], '80-87', ['mlx5_6:1']],
      [7, [7], [5], '88-95', ['mlx5_7:1']],
    ],
  );
  const env = map.ranks[7]!.env;
  t.equal(env['NCCL_IB_HCA'], '=mlx5_7:1');
  t.notOk('NCCL_IB_GID_INDEX' in env, 'InfiniBand needs no GID index');
  t.notOk('CUDA_VISIBLE_DEVICES' in env, '--gpu-bind none is the default');
  t.same(map.ranks[0]!.nics[0], {
    device: 'mlx5_0',
    port: 1,
    netdev: null,
    linkLayer: 'InfiniBand',
    gidIndex: null,
    gid: null,
  });
  t.same(map.nodes[0]!.linkLayers, ['InfiniBand']);
});

t.test('--gpu-bind visible sets CUDA_VISIBLE_DEVICES in PCI bus order', async (t) => {
  const map = planRankMap(nodes, { ranksPerNode: 'gpu', gpuBind: 'visible' });
  t.equal(map.worldSize, 16);
  t.equal(map.ranks[13]!.env['CUDA_VISIBLE_DEVICES'], '5');
  t.equal(map.ranks[13]!.env['CUDA_DEVICE_ORDER'], 'PCI_BUS_ID');
  t.equal(map.ranks[13]!.env['LOCAL_RANK'], '5');
});

t.test('--gpus-per-rank 2 with 4 ranks: each rank takes the GPUs of its NUMA nodes', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 4, gpusPerRank: 2 });
  // 4 ranks over 8 NUMA nodes do not divide evenly; each rank gets one package half
  t.same(
    map.ranks.map((r) => r.memNodes),
    [
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
    ],
  );
  t.same(
    map.ranks.map((r) => r.gpus),
    [
      [2, 3],
      [0, 1],
      [6, 7],
      [4, 5],
    ],
  );
});

t.test('more ranks than GPUs with --ranks-per-node gpu', async (t) => {
  const err = t.throws(() => planRankMap(nodes, { ranksPerNode: 'gpu', ntasks: 17 })) as PlanError;
  t.equal(err.code, PlanErrorCode.TooManyGpus);
  t.match(err.message, /-n 17 is more than the 16 GPUs of 2 nodes.*nearest feasible spec: -n 16/);
  const cpuOnly = cluster(t.testdir(), [{ name: 'clx1', address: null, machine: seed002NoHt(1) }]);
  const none = t.throws(() => planRankMap(cpuOnly, { ranksPerNode: 'gpu' })) as PlanError;
  t.equal(none.code, PlanErrorCode.TooManyGpus);
  t.equal(none.message, 'node clx1: no GPU, but --ranks-per-node gpu');
  const many = t.throws(() => planRankMap(nodes, { nodes: 1, ranksPerNode: 2, gpusPerRank: 5 })) as PlanError;
  t.equal(many.code, PlanErrorCode.TooManyGpus);
  t.same(many.suggestion, { gpusPerRank: 4 });
});

t.test('GPUs without NUMA locality: even shares by NUMA node, HCAs paired in PCI order', async (t) => {
  const machine = epycNps4Gpu8(3);
  for (const g of machine.gpus!) g.numaNode = -1;
  const blind = cluster(t.testdir(), [{ name: 'dgx3', address: null, machine }]);
  t.same(
    blind[0]!.facts.gpus.map((g) => g.numaNode),
    Array(8).fill(null),
  );
  const map = planRankMap(blind, { ranksPerNode: 'gpu' });
  t.same(
    map.ranks.map((r) => r.memNodes),
    [[0], [1], [2], [3], [4], [5], [6], [7]],
  );
  t.same(
    map.ranks.map((r) => r.nics[0]!.device),
    ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7'],
  );
});
