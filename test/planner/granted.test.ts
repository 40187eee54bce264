// Planning on what a Slurm allocation or a pod grants, not on the whole machine sysfs
// shows: the cgroup's cpuset, and the GPUs CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES
// leave in. A spec asking for more is refused at plan time with the allowed set and why.
import t from 'tap';
import { join } from 'node:path';
import { PlanError, planRankMap, type PlannerNode } from '@rankd/planner';
import { PlanErrorCode, formatCpuList, type Facts } from '@rankd/protocol';
import { readFacts, type GpuVisibilityInput } from '@rankd/topology';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { epycNps4Gpu8 } from '../helpers/machines.js';

function node(dir: string, name: string, machine: MachineSpec, gpuVisibility: GpuVisibilityInput = {}): PlannerNode {
  return { name, address: null, facts: readFacts({ root: buildSysfs(join(dir, name), machine), gpuVisibility }) };
}

/** The CI machine's shape: 2 CPUs, one thread each; the cgroup allows CPU 1 only. */
const twoCpus: MachineSpec = {
  packages: 1,
  coresPerPackage: 2,
  threadsPerCore: 1,
  cgroup: { version: 1, path: '/rankd-test', cpus: '1', mems: '0' },
};

t.test('ranks bind inside the cpuset; more ranks than allowed cores name the allowed set', async (t) => {
  const host2 = node(t.testdir(), 'host2', twoCpus);
  const map = planRankMap([host2], { ntasks: 1 });
  t.same(map.ranks[0]!.cpus, [1], 'the one rank on CPU 1, the only one the cgroup allows');

  const err = t.throws(() => planRankMap([host2], { ranksPerNode: 4 })) as PlanError;
  t.equal(err.code, PlanErrorCode.TooManyRanks);
  t.equal(
    err.message,
    "node host2: 4 ranks but only 1 allowed core (the cgroup's cpuset allows CPU 1 of CPUs 0-1; " +
      '--oversubscribe lets ranks share cores); nearest feasible spec: --ranks-per-node 1',
  );
  const twoTasks = t.throws(() => planRankMap([host2], { ntasks: 2 })) as PlanError;
  t.match(twoTasks.message, /2 ranks but only 1 allowed core \(the cgroup's cpuset allows CPU 1 of CPUs 0-1;/);

  const wide = t.throws(() => planRankMap([host2], { ntasks: 1, cpusPerRank: 2 })) as PlanError;
  t.equal(wide.code, PlanErrorCode.TooManyCpus);
  t.equal(
    wide.message,
    "node host2: -c 2 asks for more compute cores than local rank 0's share has 1 allowed core " +
      "(the cgroup's cpuset allows CPU 1 of CPUs 0-1); nearest feasible spec: -c 1",
  );
  const shared = planRankMap([host2], { ntasks: 2, oversubscribe: true });
  t.same(
    shared.ranks.map((r) => r.cpus),
    [[1], [1]],
    '--oversubscribe stays inside the cpuset too',
  );
});

t.test('a node without a cpuset says nothing of one; one whose CPUs jobs hold says that instead', async (t) => {
  const whole = node(t.testdir(), 'whole', { ...twoCpus, cgroup: { version: 2, path: '/' } });
  const err = t.throws(() => planRankMap([whole], { ranksPerNode: 3 })) as PlanError;
  t.equal(
    err.message,
    'node whole: 3 ranks but only 2 allowed cores (--oversubscribe lets ranks share cores); nearest feasible spec: --ranks-per-node 2',
  );
  // the queue plans on facts whose allowed CPUs lack the ones running jobs hold (schedule/ledger.ts)
  const held: Facts = { ...whole.facts, cpu: { ...whole.facts.cpu, allowed: [0] } };
  const busy = t.throws(() => planRankMap([{ ...whole, facts: held }], { ranksPerNode: 2 })) as PlanError;
  t.match(busy.message, /2 ranks but only 1 allowed core \(CPU 0 of CPUs 0-1 is free; jobs hold the rest;/);
  const both = node(t.testdir(), 'both', {
    ...twoCpus,
    coresPerPackage: 4,
    cgroup: { ...twoCpus.cgroup!, cpus: '1-3' },
  });
  const bothHeld: Facts = { ...both.facts, cpu: { ...both.facts.cpu, allowed: [3] } };
  const mixed = t.throws(() => planRankMap([{ ...both, facts: bothHeld }], { ranksPerNode: 2 })) as PlanError;
  t.match(mixed.message, /CPU 3 of CPUs 0-3 is free: the cgroup's cpuset allows 3 and jobs hold the rest/);
});

t.test("Slurm's CUDA_VISIBLE_DEVICES=2,3: --ranks-per-node gpu uses those two, near their NUMA node", async (t) => {
  const dgx = node(t.testdir(), 'dgx1', epycNps4Gpu8(1), { cudaVisibleDevices: '2,3' });
  const map = planRankMap([dgx], { ranksPerNode: 'gpu', gpuBind: 'visible' });
  t.same(
    map.ranks.map((r) => [r.gpus, r.memNodes, formatCpuList(r.cpus), r.env['CUDA_VISIBLE_DEVICES']]),
    [
      // GPUs 2 and 3 sit on NUMA node 1 (cores 16-31)
      [[2], [1], '16-23', '2'],
      [[3], [1], '24-31', '3'],
    ],
  );
  const err = t.throws(() => planRankMap([dgx], { ranksPerNode: 4, gpusPerRank: 1 })) as PlanError;
  t.equal(err.code, PlanErrorCode.TooManyGpus);
  t.equal(
    err.message,
    'node dgx1: 4 ranks × 1 GPU ask for 4, but only 2 are allowed ' +
      '(CUDA_VISIBLE_DEVICES=2,3 allows GPUs 2,3 of 0,1,2,3,4,5,6,7)',
  );
  const perGpu = t.throws(() => planRankMap([dgx], { ranksPerNode: 'gpu', ntasks: 3 })) as PlanError;
  t.equal(perGpu.code, PlanErrorCode.TooManyGpus);
  t.match(
    perGpu.message,
    /^-n 3 is more than the 2 allowed GPUs of 1 node with --ranks-per-node gpu \(dgx1: CUDA_VISIBLE_DEVICES=2,3 allows GPUs 2,3 of 0,1,2,3,4,5,6,7\); nearest feasible spec: -n 2$/,
  );
});

t.test('a pod granted one GPU by UUID: --gpus-per-rank takes only it', async (t) => {
  const machine = epycNps4Gpu8(2);
  machine.gpus = machine.gpus!.map((g, i) => ({
    ...g,
    uuid: `GPU-${String(i).repeat(8)}-1111-2222-3333-444444444444`,
  }));
  const pod = node(t.testdir(), 'pod0', machine, { nvidiaVisibleDevices: 'GPU-55555555-1111-2222-3333-444444444444' });
  const map = planRankMap([pod], { ntasks: 1, gpusPerRank: 1 });
  t.same(map.ranks[0]!.gpus, [5], 'the granted GPU, not GPU 0');
  const err = t.throws(() => planRankMap([pod], { ntasks: 1, gpusPerRank: 2 })) as PlanError;
  t.match(
    err.message,
    /asks for 2, but only 1 is allowed \(NVIDIA_VISIBLE_DEVICES=GPU-55555555-1111-2222-3333-444444444444 allows GPU 5 of 0,1,2,3,4,5,6,7\)/,
  );
});

t.test('no GPU granted: a GPU job is refused saying so', async (t) => {
  const none = node(t.testdir(), 'dgx3', epycNps4Gpu8(3), { cudaVisibleDevices: 'NoDevFiles' });
  const err = t.throws(() => planRankMap([none], { ranksPerNode: 1, gpusPerRank: 1 })) as PlanError;
  t.match(err.message, /but only 0 are allowed \(CUDA_VISIBLE_DEVICES=NoDevFiles allows no GPU of 0,1,2,3,4,5,6,7\)/);
  t.same(planRankMap([none], { ranksPerNode: 1 }).ranks[0]!.gpus, [], 'a job without GPUs still runs');
  const perGpu = t.throws(() => planRankMap([none], { ranksPerNode: 'gpu' })) as PlanError;
  t.equal(
    perGpu.message,
    'node dgx3: no allowed GPU (CUDA_VISIBLE_DEVICES=NoDevFiles allows no GPU of 0,1,2,3,4,5,6,7), but --ranks-per-node gpu',
  );
});
