// Seed 002: 2 × 28 cores without hyperthreads, 2 ranks per node, each with 24 compute
// cores and 4 worker cores of its own socket.
import t from 'tap';
import { PlanError, planRankMap } from '@rankd/controller/planner/index';
import { PlanErrorCode, formatCpuList } from '@rankd/protocol';
import { seed002NoHt } from '../helpers/machines.js';
import { uniform } from './cluster.js';

const nodes = uniform(t.testdir(), seed002NoHt, 2, 'clx', '10.3.0');

t.test('--ppn socket -c 24 --comm-workers 4: workers on the last 4 cores of each socket', async (t) => {
  const map = planRankMap(nodes, { ranksPerNode: 'socket', cpusPerRank: 24, commWorkers: 4 });
  t.same(
    map.ranks.map((r) => [r.node, formatCpuList(r.cpus), formatCpuList(r.commCpus), r.memNodes]),
    [
      ['clx1', '0-23', '24-27', [0]],
      ['clx1', '28-51', '52-55', [1]],
      ['clx2', '0-23', '24-27', [0]],
      ['clx2', '28-51', '52-55', [1]],
    ],
  );
  t.equal(map.ranks[0]!.env['CCL_WORKER_AFFINITY'], '24,25,26,27,52,53,54,55');
  t.equal(map.ranks[0]!.env['OMP_NUM_THREADS'], '24');
  // no RDMA device: no NIC variables at all
  t.same(map.ranks[0]!.nics, []);
  t.same(map.nodes.map((n) => n.linkLayers), [[], []]);
});

t.test('without -c, cores mode leaves the share minus the workers to compute', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 'numa', commWorkers: 4 });
  t.same(map.ranks.map((r) => formatCpuList(r.cpus)), ['0-23', '28-51']);
});

t.test('the default for machines without hyperthreads is --comm-on cores; siblings cannot work', async (t) => {
  const err = t.throws(() => planRankMap(nodes, { nodes: 1, ranksPerNode: 2, commWorkers: 4, commOn: 'siblings' })) as PlanError;
  t.equal(err.code, PlanErrorCode.CommNoRoom);
  t.match(err.message, /^node clx1: comm workers on siblings, but core of CPU 24 has no allowed sibling thread; nearest feasible spec: --comm-on cores -c 24$/);
});

t.test('no room for the workers beside 28 compute cores', async (t) => {
  const err = t.throws(() => planRankMap(nodes, { ranksPerNode: 2, cpusPerRank: 28, commWorkers: 4 })) as PlanError;
  t.equal(err.code, PlanErrorCode.CommNoRoom);
  t.equal(err.node, 'clx1');
  t.same(err.suggestion, { cpusPerRank: 24 });
  t.match(err.message, /nearest feasible spec: -c 24/);
});

t.test('the matrix is TCP between nodes without RDMA', async (t) => {
  const { renderRankMap } = await import('@rankd/controller/planner/views/index');
  const map = planRankMap(nodes, {});
  t.match(renderRankMap(map, 'matrix'), /^ {5}0 \| {9}shm {10}TCP $/m);
});
