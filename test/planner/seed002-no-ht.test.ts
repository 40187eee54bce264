// Seed 002: 2 × 28 cores without hyperthreads, 2 ranks per node, each with 24 compute
// cores and 4 worker cores of its own socket.
import t from 'tap';
import { PlanError, planRankMap } from '@rankd/planner';
import { PlanErrorCode, formatCpuList, parseCpuList } from '@rankd/protocol';
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
  t.same(
    map.nodes.map((n) => n.linkLayers),
    [[], []],
  );
});

t.test('without -c, cores mode leaves the share minus the workers to compute', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 'numa', commWorkers: 4 });
  t.same(
    map.ranks.map((r) => formatCpuList(r.cpus)),
    ['0-23', '28-51'],
  );
});

t.test('the default for machines without hyperthreads is --comm-on cores; siblings cannot work', async (t) => {
  const err = t.throws(() =>
    planRankMap(nodes, { nodes: 1, ranksPerNode: 2, commWorkers: 4, commOn: 'siblings' }),
  ) as PlanError;
  t.equal(err.code, PlanErrorCode.CommNoRoom);
  t.match(
    err.message,
    /^node clx1: comm workers on siblings, but core of CPU 24 has no allowed sibling thread; nearest feasible spec: --comm-on cores -c 24$/,
  );
});

t.test('no room for the workers beside 28 compute cores', async (t) => {
  const err = t.throws(() => planRankMap(nodes, { ranksPerNode: 2, cpusPerRank: 28, commWorkers: 4 })) as PlanError;
  t.equal(err.code, PlanErrorCode.CommNoRoom);
  t.equal(err.node, 'clx1');
  t.same(err.suggestion, { cpusPerRank: 24 });
  t.match(err.message, /nearest feasible spec: -c 24/);
});

t.test('the matrix is TCP between nodes without RDMA', async (t) => {
  const { renderRankMap } = await import('@rankd/planner/views');
  const map = planRankMap(nodes, {});
  t.match(renderRankMap(map, 'matrix'), /^ {5}0 \| {9}shm {10}TCP $/m);
});

// The runbook's hydra lines, 1 node then 2:
//   mpiexec.hydra [-f hostfile] -np 2|4 -ppn 2 -l -genv I_MPI_PIN_DOMAIN=[0x0000000FFFFFF0,0xFFFFFF00000000] …
// with CCL_WORKER_COUNT=4, CCL_WORKER_AFFINITY="0,1,2,3,28,29,31,32" and OMP_NUM_THREADS=24.
const seedSpec = { ranksPerNode: 2, cpusPerRank: 24, commWorkers: 4 } as const;
const SEED_PIN_DOMAIN = '[0x0000000FFFFFF0,0xFFFFFF00000000]';

t.test("--format impi: the runbook's hydra line for 2 nodes, from the plan", async (t) => {
  const { renderRankMap } = await import('@rankd/planner/views');
  const map = planRankMap(nodes, seedSpec);
  t.equal(
    renderRankMap(map, 'impi'),
    [
      "# Intel MPI's mpiexec.hydra: I_MPI_PIN_DOMAIN pins local rank i to mask i, its compute and comm-worker CPUs",
      '# ./machinefile is `rankd plan --format machinefile` with the same placement flags',
      "# CCL_PROCESS_LAUNCHER=hydra, not the plan's none: oneCCL then reads its local rank from MPI_LOCALRANKID, not CCL_LOCAL_RANK and CCL_LOCAL_SIZE",
      "# not -genv'd, they differ between ranks: RANK LOCAL_RANK GROUP_RANK NODE_RANK ROLE_RANK CROSS_RANK;" +
        " hydra sets PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS for each rank to derive them from (--format env shows each rank's values)",
      "# MPICH's hydra ignores I_MPI_PIN_DOMAIN (it pins with -bind-to)",
      'mpiexec.hydra -machinefile machinefile -np 4 -ppn 2 -l \\',
      "    -genv I_MPI_PIN_DOMAIN='[0x0000000FFFFFFF,0xFFFFFFF0000000]' \\",
      '    -genv CCL_PROCESS_LAUNCHER=hydra \\',
      '    -genv WORLD_SIZE=4 \\',
      '    -genv LOCAL_WORLD_SIZE=2 \\',
      '    -genv ROLE_WORLD_SIZE=4 \\',
      '    -genv MASTER_ADDR=10.3.0.1 \\',
      '    -genv MASTER_PORT=29500 \\',
      '    -genv CROSS_SIZE=2 \\',
      '    -genv LOCAL_SIZE=2 \\',
      '    -genv OMP_NUM_THREADS=24 \\',
      '    -genv CCL_WORKER_COUNT=4 \\',
      '    -genv CCL_WORKER_AFFINITY=24,25,26,27,52,53,54,55 \\',
      '    <command>',
      '',
    ].join('\n'),
  );
  t.equal(renderRankMap(map, 'machinefile'), 'clx1:2\nclx2:2\n');
  // one node: the runbook's single-node line, -np 2 -ppn 2
  const single = renderRankMap(planRankMap(nodes, { ...seedSpec, nodes: 1 }), 'impi');
  t.match(single, /^mpiexec\.hydra -machinefile machinefile -np 2 -ppn 2 -l \\$/m);
  t.match(single, /^ {4}-genv I_MPI_PIN_DOMAIN='\[0x0000000FFFFFFF,0xFFFFFFF0000000\]' \\$/m);
});

t.test(
  "the seed's masks are not the plan's: its domains leave out its workers, which sit at the other end of each socket",
  async (t) => {
    const { readHydraLine, pinDomainCpus, domainOf } = await import('./hydra-line.js');
    const { renderRankMap } = await import('@rankd/planner/views');
    const map = planRankMap(nodes, seedSpec);
    const planned = pinDomainCpus(readHydraLine(renderRankMap(map, 'impi')).genv['I_MPI_PIN_DOMAIN']!);
    // the plan's masks are each rank's compute and worker CPUs: its whole socket
    t.same(planned.map(formatCpuList), ['0-27', '28-55']);
    t.same(planned, [domainOf(map.ranks[0]!), domainOf(map.ranks[1]!)]);

    // The seed's masks hold compute cores only, 4-27 and 32-55: it keeps the 4 worker cores
    // of each socket outside the domain and lets oneCCL pin its worker threads there itself.
    // rankd puts them inside (the brief of this view: oneCCL's workers are threads of the
    // rank's process, and the rankfile view and rankd's own binding give a rank the same
    // set), so the masks cannot be the seed's text.
    const seed = pinDomainCpus(SEED_PIN_DOMAIN);
    t.same(seed.map(formatCpuList), ['4-27', '32-55']);
    // Second, the seed takes each socket's first 4 cores for workers, rankd its last 4
    // (docs/planner.md: --comm-on cores reserves the share's last cores), so even the compute
    // CPUs differ: the plan's 0-23 and 28-51 against the seed's 4-27 and 32-55.
    t.same(
      map.ranks.slice(0, 2).map((r) => formatCpuList(r.cpus)),
      ['0-23', '28-51'],
    );
    t.equal(map.ranks[0]!.env['CCL_WORKER_AFFINITY'], '24,25,26,27,52,53,54,55');
    // The seed's worker list is "0,1,2,3,28,29,31,32": 32 is one of rank 1's own compute
    // cores and 30 is nobody's, a slip for 28,29,30,31.
    const seedWorkers = parseCpuList('0,1,2,3,28,29,31,32');
    t.same(
      seedWorkers.filter((c) => seed[1]!.includes(c)),
      [32],
    );
    // With the workers it means added, the seed's domains are the plan's exactly: either way
    // each rank has its whole socket.
    const meant = [parseCpuList('0-3'), parseCpuList('28-31')];
    t.same(
      seed.map((s, i) => [...meant[i]!, ...s].sort((a, b) => a - b)),
      planned,
    );
  },
);
