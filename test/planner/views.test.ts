// The views of a rank map: what `rankd plan --format …` prints.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { Compile } from 'typebox/compile';
import { RankMap, formatCpuList } from '@rankd/protocol';
import { parseHostfile } from '#controller/fleet/inventory/hostfile';
import { planRankMap } from '@rankd/planner';
import { renderRankMap } from '@rankd/planner/views';
import { cgroupRestricted, epycNps4Gpu8, seed000Spr, seed002NoHt } from '../helpers/machines.js';
import { uniform } from './cluster.js';
import { domainOf, pinDomainCpus, ranksByNode, readHydraLine } from './hydra-line.js';

const dir = t.testdir();
const spr = uniform(`${dir}/spr`, seed000Spr, 2, 'node', '10.1.0');
const shared = uniform(`${dir}/cg`, cgroupRestricted, 1, 'shared', null);
const seedMap = planRankMap(spr, { ranksPerNode: 2, cpusPerRank: 48, commWorkers: 4 });

t.test('table: the oneCCL node table, then one row per rank, then the rendezvous', async (t) => {
  t.equal(
    renderRankMap(seedMap, 'table'),
    [
      '    ID |               Node name |             IP | Ranks',
      '     0 |                   node1 |       10.1.0.1 | 0-1',
      '     1 |                   node2 |       10.1.0.2 | 2-3',
      '',
      'RANK  NODE   LOCAL  CPUS    COMM     MEM  NIC                                GID                      GPU',
      '0     node1  0      0-47    164-167  0    irdma-cvl01tf2:1,irdma-cvl02tf2:1  3(10.0.0.1),3(10.0.1.1)  -',
      '1     node1  1      56-103  220-223  1    irdma-cvl11tf2:1,irdma-cvl12tf2:1  3(10.0.2.1),3(10.0.3.1)  -',
      '2     node2  0      0-47    164-167  0    irdma-cvl01tf2:1,irdma-cvl02tf2:1  3(10.0.0.2),3(10.0.1.2)  -',
      '3     node2  1      56-103  220-223  1    irdma-cvl11tf2:1,irdma-cvl12tf2:1  3(10.0.2.2),3(10.0.3.2)  -',
      '',
      'world size 4, master 10.1.0.1:29500',
      '',
    ].join('\n'),
  );
});

t.test('table: notes close the view', async (t) => {
  const text = renderRankMap(planRankMap(shared, { ranksPerNode: 2 }), 'table');
  t.match(
    text,
    /\nworld size 2, master shared1:29500\nnote: node shared1 has no known address: MASTER_ADDR is its name\nnote: node shared1: no RDMA device on NUMA node 0; took the nearest: mlx5_0\n$/,
  );
});

t.test('matrix: RDMA only between nodes sharing a link layer', async (t) => {
  const mixed = [...spr, ...uniform(`${dir}/dgx`, epycNps4Gpu8, 1, 'dgx', '10.4.0')];
  t.equal(
    renderRankMap(planRankMap(mixed, {}), 'matrix'),
    [
      '    ID |           0            1            2 ',
      // dgx1 sorts first: InfiniBand there, RoCE on node1 and node2
      '     0 |         shm          TCP          TCP ',
      '     1 |         TCP          shm         RDMA ',
      '     2 |         TCP         RDMA          shm ',
      '',
    ].join('\n'),
  );
  // --nic none plans TCP everywhere
  t.notMatch(renderRankMap(planRankMap(spr, { nic: 'none' }), 'matrix'), /RDMA/);
});

t.test('bindings: Open MPI --report-bindings lines, drawn from the facts', async (t) => {
  const clx = uniform(`${dir}/clx`, seed002NoHt, 1, 'clx', null);
  const facts = { clx1: clx[0]!.facts };
  const map = planRankMap(clx, { ranksPerNode: 'socket', cpusPerRank: 2 });
  const empty = Array(28).fill('.').join('/');
  t.equal(
    renderRankMap(map, 'bindings', facts),
    `[clx1] MCW rank 0 bound to socket 0[core 0[hwt 0]], socket 0[core 1[hwt 0]]: [B/B/${Array(26).fill('.').join('/')}][${empty}]\n` +
      `[clx1] MCW rank 1 bound to socket 1[core 28[hwt 0]], socket 1[core 29[hwt 0]]: [${empty}][B/B/${Array(26).fill('.').join('/')}]\n`,
  );
  const ht = planRankMap(shared, { ranksPerNode: 2, cpusPerRank: 1, ht: 'all', commWorkers: 1 });
  const line = renderRankMap(ht, 'bindings', { shared1: shared[0]!.facts }).split('\n')[0]!;
  // compute on both threads of core 4, the worker on the second thread of core 15
  t.equal(
    line,
    `[shared1] MCW rank 0 bound to socket 0[core 4[hwt 0-1]], socket 0[core 15[hwt 1]]: [../../../../BB/${Array(10).fill('..').join('/')}/.B][${Array(16).fill('..').join('/')}]`,
  );
  // without facts (a map from the controller), the CPU list stands in
  t.equal(renderRankMap(map, 'bindings').split('\n')[1], '[clx1] MCW rank 1 bound to cpus 28-29');
});

t.test('hostfile and rankfile', async (t) => {
  t.equal(renderRankMap(seedMap, 'hostfile'), 'node1 slots=2\nnode2 slots=2\n');
  t.equal(
    renderRankMap(seedMap, 'rankfile'),
    '# physical CPU ids: mpirun --mca rmaps_rank_file_physical 1 --rankfile FILE\n' +
      'rank 0=node1 slot=0-47,164-167\nrank 1=node1 slot=56-103,220-223\nrank 2=node2 slot=0-47,164-167\nrank 3=node2 slot=56-103,220-223\n',
  );
});

t.test("env: a shell sourcing a rank's block gets exactly its environment", async (t) => {
  const tricky = { GREETING: 'it\'s a "test" $HOME `x`', EMPTY: '' };
  const map = planRankMap(spr, { ranksPerNode: 2, commWorkers: 1, env: tricky });
  const blocks = renderRankMap(map, 'env').split('\n\n');
  t.equal(blocks.length, 4);
  t.match(blocks[2], /^# rank 2: node node2, local rank 0\nexport RANK=2\n/);
  const file = join(dir, 'rank2.env');
  writeFileSync(file, blocks[2]!);
  const keys = Object.keys(map.ranks[2]!.env);
  const script = `. ${file}; for k in ${keys.join(' ')}; do eval "printf '%s=%s\\\\0' \\"\\$k\\" \\"\\\${$k}\\""; done`;
  const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', env: {} });
  const got = Object.fromEntries(
    out
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  t.same(got, map.ranks[2]!.env);
});

t.test('json: the map itself, valid against the RankMap schema', async (t) => {
  const parsed = JSON.parse(renderRankMap(seedMap, 'json'));
  t.same(parsed, seedMap);
  t.ok(Compile(RankMap).Check(parsed));
});

t.test('maps are independent values: changing one rank leaves the others alone', async (t) => {
  const map = planRankMap(spr, { ranksPerNode: 2 });
  map.ranks[0]!.cpus.push(999);
  map.ranks[0]!.nics[0]!.gidIndex = 99;
  t.notOk(map.ranks[2]!.cpus.includes(999));
  t.equal(map.ranks[2]!.nics[0]!.gidIndex, 3);
  // nor does it leak into the next plan of the same topology
  const again = planRankMap(spr, { ranksPerNode: 2 });
  t.notOk(again.ranks[0]!.cpus.includes(999));
  t.equal(again.ranks[0]!.nics[0]!.gidIndex, 3);
});

/**
 * What every `--format impi` line must hold against its map: argument sets cover the nodes
 * in order, mask i of a node is its local rank i's compute and worker CPUs, every variable
 * passed has that value on every rank it reaches, and every other variable of the plan is
 * named as left out (or is one hydra sets, or oneCCL's launcher trio).
 */
function checkImpi(t: Test, map: RankMap): ReturnType<typeof readHydraLine> {
  const line = readHydraLine(renderRankMap(map, 'impi'));
  const nodes = ranksByNode(map);
  let next = 0;
  for (const set of line.sets) {
    const masks = pinDomainCpus(set.env['I_MPI_PIN_DOMAIN'] ?? line.genv['I_MPI_PIN_DOMAIN']!);
    const reached = [];
    for (let left = set.n!; left > 0; next++) {
      const ranks = nodes[next]!;
      t.same(masks, ranks.map(domainOf), `masks of ${map.nodes[next]!.name}`);
      reached.push(...ranks);
      left -= ranks.length;
    }
    for (const r of reached) {
      for (const [k, v] of Object.entries({ ...line.genv, ...set.env })) {
        if (k === 'I_MPI_PIN_DOMAIN' || k === 'CCL_PROCESS_LAUNCHER') continue;
        t.equal(r.env[k], v, `${k} of rank ${r.rank}`);
      }
    }
  }
  t.equal(next, map.nodes.length, 'every node has its argument set');
  const leftOut =
    /^# not -genv'd, they differ between ranks: ([^;]*);/m.exec(line.comments.join('\n'))?.[1]?.split(' ') ?? [];
  const passed = new Set([...Object.keys(line.genv), ...line.sets.flatMap((s) => Object.keys(s.env))]);
  const byHydra = ['PMI_RANK', 'PMI_SIZE', 'MPI_LOCALRANKID', 'MPI_LOCALNRANKS', 'CCL_LOCAL_RANK', 'CCL_LOCAL_SIZE'];
  for (const k of new Set(map.ranks.flatMap((r) => Object.keys(r.env)))) {
    t.ok(passed.has(k) !== leftOut.includes(k) || byHydra.includes(k), `${k} is passed or named as left out, not both`);
  }
  return line;
}

t.test("impi on RDMA nodes: each local rank's NICs differ, so they are named, not -genv'd", async (t) => {
  const line = checkImpi(t, seedMap);
  t.same(line.options, { '-machinefile': 'machinefile', '-np': '4', '-ppn': '2', '-l': '' });
  // the rankfile's slots, as masks
  t.same(pinDomainCpus(line.genv['I_MPI_PIN_DOMAIN']!).map(formatCpuList), ['0-47,164-167', '56-103,220-223']);
  for (const k of [
    'RANK',
    'LOCAL_RANK',
    'NODE_RANK',
    'CCL_LOCAL_RANK',
    'NCCL_IB_HCA',
    'CCL_MNIC_NAME',
    'UCX_NET_DEVICES',
    'PSM3_NIC',
  ]) {
    t.notOk(k in line.genv, `${k} is not -genv'd`);
  }
  t.match(
    line.comments.join('\n'),
    /differ between ranks: RANK LOCAL_RANK GROUP_RANK NODE_RANK ROLE_RANK CROSS_RANK .*NCCL_IB_HCA/,
  );
  t.equal(line.genv['CCL_MNIC'], 'local', "what every rank shares is -genv'd");
});

// two kinds of node: 2 × 28 cores in 2 NUMA nodes, and 2 × 64 cores with threads in 8
const unlike = [
  ...uniform(`${dir}/unlike`, seed002NoHt, 2, 'clx', '10.3.0'),
  ...uniform(`${dir}/unlike`, epycNps4Gpu8, 1, 'dgx', '10.4.0'),
];

t.test('impi on unlike nodes: one command, an argument set per run of alike nodes', async (t) => {
  const map = planRankMap(unlike, { ranksPerNode: 'numa', commWorkers: 2 });
  t.same(
    map.nodes.map((n) => [n.name, n.ranks.length]),
    [
      ['clx1', 2],
      ['clx2', 2],
      ['dgx1', 8],
    ],
  );
  const line = checkImpi(t, map);
  // the two clx nodes share a set; no -np or -ppn, which would fight the sets' -n
  t.same(
    line.sets.map((s) => s.n),
    [4, 8],
  );
  t.same(line.options, { '-machinefile': 'machinefile', '-l': '' });
  t.notOk('I_MPI_PIN_DOMAIN' in line.genv);
  // what differs between the kinds of node but not within one goes in each set's -env:
  // without hyperthreads the workers take 2 of 28 cores, on dgx1 sibling threads of 16
  t.same([line.sets[0]!.env['OMP_NUM_THREADS'], line.sets[1]!.env['OMP_NUM_THREADS']], ['26', '16']);
  t.same(
    [line.sets[0]!.env['CCL_MNIC'], line.sets[1]!.env['CCL_MNIC']],
    [undefined, 'local'],
    'a node without RDMA has no CCL_MNIC',
  );
  t.equal(line.genv['WORLD_SIZE'], '12');
  const text = line.comments.join('\n');
  t.match(text, /one argument set per run of alike nodes/);
  t.match(text, /ranks per node differ \(2, 8\): -ppn cannot say that, the machinefile's counts do/);
  t.equal(renderRankMap(map, 'machinefile'), 'clx1:2\nclx2:2\ndgx1:8\n');
});

t.test('impi and machinefile with --distribution cyclic: -ppn 1, or a note where hydra cannot follow', async (t) => {
  const cyclic = planRankMap(spr, { ranksPerNode: 2, distribution: 'cyclic' });
  t.same(
    cyclic.nodes.map((n) => n.ranks),
    [
      [0, 2],
      [1, 3],
    ],
  );
  const line = checkImpi(t, cyclic);
  t.equal(line.options['-ppn'], '1');
  t.match(
    renderRankMap(cyclic, 'machinefile'),
    /^# the plan deals ranks round robin: run with -ppn 1 .*\nnode1:2\nnode2:2\n$/,
  );
  // capacities 2 and 8: once clx1 is full the plan deals on to dgx1 alone, which hydra
  // cannot do; each node still gets its count and its domains
  const uneven = planRankMap(unlike, {
    nodelist: ['clx1', 'dgx1'],
    ranksPerNode: 'numa',
    ntasks: 6,
    distribution: 'cyclic',
  });
  t.same(
    uneven.nodes.map((n) => n.ranks),
    [
      [0, 2],
      [1, 3, 4, 5],
    ],
  );
  checkImpi(t, uneven);
  t.match(renderRankMap(uneven, 'impi'), /^# hydra numbers ranks node by node; the plan numbers them otherwise/m);
  t.match(
    renderRankMap(uneven, 'machinefile'),
    /^# hydra numbers ranks node by node from these counts.*\nclx1:2\ndgx1:4\n$/,
  );
});

t.test("impi: --env values reach hydra exactly; rankd's PMI_ copies are left to hydra", async (t) => {
  const tricky = { GREETING: 'it\'s a "test" $HOME `x`', EMPTY: '', EQUATION: 'a=b=c', I_MPI_DEBUG: '4' };
  const map = planRankMap(spr, { ranksPerNode: 2, envProfile: 'mpi', env: tricky });
  const line = checkImpi(t, map);
  for (const [k, v] of Object.entries(tricky)) t.equal(line.genv[k], v, k);
  for (const k of ['PMI_RANK', 'PMI_SIZE', 'MPI_LOCALRANKID', 'MPI_LOCALNRANKS'])
    t.notOk(k in line.genv, `${k} is hydra's`);
  t.match(line.comments.join('\n'), /differ between ranks: .*OMPI_COMM_WORLD_RANK/);
  // a user's own I_MPI_PIN_DOMAIN stands, as --env overrides anything
  const own = readHydraLine(
    renderRankMap(planRankMap(spr, { ranksPerNode: 2, env: { I_MPI_PIN_DOMAIN: 'socket' } }), 'impi'),
  );
  t.equal(own.genv['I_MPI_PIN_DOMAIN'], 'socket');
  t.match(own.comments.join('\n'), /I_MPI_PIN_DOMAIN is the one --env gave, not the plan's masks/);
});

t.test(
  'machinefile: host:N per node in node order, names as the hostfile view, read back by the inventory',
  async (t) => {
    const uneven = planRankMap(spr, { ranksPerNode: 3, ntasks: 4 });
    const text = renderRankMap(uneven, 'machinefile');
    t.equal(text, 'node1:3\nnode2:1\n');
    const doc = parseHostfile(text, 'machinefile');
    t.same(
      Object.entries(doc.hosts).map(([h, v]) => [h, v.vars['slots']]),
      [
        ['node1', '3'],
        ['node2', '1'],
      ],
    );
    // the hostfile view names the same hosts, though the map knows their addresses
    t.equal(renderRankMap(uneven, 'hostfile'), 'node1 slots=3\nnode2 slots=1\n');
    t.equal(uneven.nodes[0]!.address, '10.1.0.1');
  },
);
