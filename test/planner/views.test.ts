// The views of a rank map: what `rankd plan --format …` prints.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Compile } from 'typebox/compile';
import { RankMap } from '@rankd/protocol';
import { planRankMap } from '@rankd/controller/planner/index';
import { renderRankMap } from '@rankd/controller/planner/views/index';
import { cgroupRestricted, epycNps4Gpu8, seed000Spr, seed002NoHt } from '../helpers/machines.js';
import { uniform } from './cluster.js';

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
  t.match(text, /\nworld size 2, master shared1:29500\nnote: node shared1 has no known address: MASTER_ADDR is its name\nnote: node shared1: no RDMA device on NUMA node 0; took the nearest: mlx5_0\n$/);
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

t.test('env: a shell sourcing a rank\'s block gets exactly its environment', async (t) => {
  const tricky = { GREETING: "it's a \"test\" $HOME `x`", EMPTY: '' };
  const map = planRankMap(spr, { ranksPerNode: 2, commWorkers: 1, env: tricky });
  const blocks = renderRankMap(map, 'env').split('\n\n');
  t.equal(blocks.length, 4);
  t.match(blocks[2], /^# rank 2: node node2, local rank 0\nexport RANK=2\n/);
  const file = join(dir, 'rank2.env');
  writeFileSync(file, blocks[2]!);
  const keys = Object.keys(map.ranks[2]!.env);
  const script = `. ${file}; for k in ${keys.join(' ')}; do eval "printf '%s=%s\\\\0' \\"\\$k\\" \\"\\\${$k}\\""; done`;
  const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', env: {} });
  const got = Object.fromEntries(out.split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
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
