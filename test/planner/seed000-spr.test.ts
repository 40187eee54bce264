// Seed 000: 2 × 56-core Sapphire Rapids nodes (siblings i / i+112) with four irdma
// ports, two per socket. The runbook types --bind_core_list 0-47,56-103 and
// CCL_WORKER_AFFINITY=164,…,167,220,…,223 by hand; the planner must give exactly that.
import t from 'tap';
import { planRankMap } from '@rankd/planner';
import { formatCpuList } from '@rankd/protocol';
import { ipv4Gid, seed000Spr } from '../helpers/machines.js';
import { cpus, uniform } from './cluster.js';

const nodes = uniform(t.testdir(), seed000Spr, 2, 'node', '10.1.0');

t.test("2 ranks per node, -c 48 --comm-workers 4: the seed's lists", async (t) => {
  const map = planRankMap(nodes, { ranksPerNode: 2, cpusPerRank: 48, commWorkers: 4 });
  t.equal(map.worldSize, 4);
  t.equal(map.masterAddr, '10.1.0.1');
  t.same(
    map.ranks.map((r) => [r.rank, r.node, r.localRank, formatCpuList(r.cpus), formatCpuList(r.commCpus), r.memNodes]),
    [
      [0, 'node1', 0, '0-47', '164-167', [0]],
      [1, 'node1', 1, '56-103', '220-223', [1]],
      [2, 'node2', 0, '0-47', '164-167', [0]],
      [3, 'node2', 1, '56-103', '220-223', [1]],
    ],
  );
  t.same(map.ranks[1]!.cpus, cpus('56-103'));
  // each rank uses the two ports of its own socket, with the IPv4 RoCE v2 GID
  t.same(map.ranks[0]!.nics, [
    {
      device: 'irdma-cvl01tf2',
      port: 1,
      netdev: 'cvl01tf2',
      linkLayer: 'Ethernet',
      gidIndex: 3,
      gid: ipv4Gid('10.0.0.1'),
    },
    {
      device: 'irdma-cvl02tf2',
      port: 1,
      netdev: 'cvl02tf2',
      linkLayer: 'Ethernet',
      gidIndex: 3,
      gid: ipv4Gid('10.0.1.1'),
    },
  ]);
  t.same(
    map.ranks[3]!.nics.map((n) => [n.device, n.gid]),
    [
      ['irdma-cvl11tf2', ipv4Gid('10.0.2.2')],
      ['irdma-cvl12tf2', ipv4Gid('10.0.3.2')],
    ],
  );
  t.same(map.notes, []);
});

t.test('the whole environment of one rank', async (t) => {
  const map = planRankMap(nodes, { ranksPerNode: 2, cpusPerRank: 48, commWorkers: 4, masterPort: 29600 });
  t.same(map.ranks[3]!.env, {
    RANK: '3',
    LOCAL_RANK: '1',
    WORLD_SIZE: '4',
    LOCAL_WORLD_SIZE: '2',
    GROUP_RANK: '1',
    NODE_RANK: '1',
    ROLE_RANK: '3',
    ROLE_WORLD_SIZE: '4',
    MASTER_ADDR: '10.1.0.1',
    MASTER_PORT: '29600',
    CROSS_RANK: '1',
    CROSS_SIZE: '2',
    LOCAL_SIZE: '2',
    OMP_NUM_THREADS: '48',
    CCL_WORKER_COUNT: '4',
    CCL_WORKER_AFFINITY: '164,165,166,167,220,221,222,223',
    CCL_MNIC: 'local',
    CCL_MNIC_NAME: 'irdma-cvl11tf2,irdma-cvl12tf2',
    CCL_LOCAL_RANK: '1',
    CCL_LOCAL_SIZE: '2',
    CCL_PROCESS_LAUNCHER: 'none',
    NCCL_IB_HCA: '=irdma-cvl11tf2:1,irdma-cvl12tf2:1',
    NCCL_IB_GID_INDEX: '3',
    // captured trees carry no addresses: the rank's RDMA netdev stands in
    NCCL_SOCKET_IFNAME: '=cvl11tf2',
    GLOO_SOCKET_IFNAME: 'cvl11tf2',
    PSM3_NIC: 'irdma-cvl11tf2',
    UCX_NET_DEVICES: 'irdma-cvl11tf2:1,irdma-cvl12tf2:1',
    FI_VERBS_IFACE: 'cvl11tf2',
  });
});

t.test("the seed's other worker counts", async (t) => {
  const affinity = (k: number) =>
    planRankMap(nodes, { ranksPerNode: 2, cpusPerRank: 48, commWorkers: k }).ranks[0]!.env['CCL_WORKER_AFFINITY'];
  t.equal(affinity(1), '167,223');
  t.equal(affinity(2), '166,167,222,223');
  t.equal(affinity(4), '164,165,166,167,220,221,222,223');
});

t.test('--comm-on cores keeps workers on cores of their own, after the compute cores', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 2, cpusPerRank: 48, commWorkers: 4, commOn: 'cores' });
  t.equal(formatCpuList(map.ranks[0]!.commCpus), '52-55');
  t.equal(formatCpuList(map.ranks[1]!.commCpus), '108-111');
});

t.test('--ht all adds the sibling threads to compute', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 2, cpusPerRank: 48, ht: 'all' });
  t.equal(formatCpuList(map.ranks[0]!.cpus), '0-47,112-159');
  t.equal(map.ranks[0]!.env['OMP_NUM_THREADS'], '96');
});

t.test('one rank per node spans both sockets and uses all four ports', async (t) => {
  const map = planRankMap(nodes, {});
  t.equal(formatCpuList(map.ranks[0]!.cpus), '0-111');
  t.same(map.ranks[0]!.memNodes, [0, 1]);
  t.same(
    map.ranks[0]!.nics.map((n) => n.device),
    ['irdma-cvl01tf2', 'irdma-cvl02tf2', 'irdma-cvl11tf2', 'irdma-cvl12tf2'],
  );
  t.match(map.notes, [/local rank 0 spans NUMA nodes 0,1/]);
});

t.test('4 ranks per node: two per socket, split evenly inside it', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 4 });
  t.same(
    map.ranks.map((r) => formatCpuList(r.cpus)),
    ['0-27', '28-55', '56-83', '84-111'],
  );
});

t.test(
  '3 ranks per node: even shares of 38/37/37 cores cannot stay in a socket, so they follow core order',
  async (t) => {
    const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 3 });
    t.same(
      map.ranks.map((r) => formatCpuList(r.cpus)),
      ['0-37', '38-74', '75-111'],
    );
    t.match(map.notes.join('\n'), /local rank 1 spans NUMA nodes 0,1/);
  },
);

t.test('--nic with a pattern narrows the devices; the local rule still applies', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 2, nic: 'irdma-cvl?1tf2' });
  t.same(
    map.ranks.map((r) => r.nics.map((n) => n.device)),
    [['irdma-cvl01tf2'], ['irdma-cvl11tf2']],
  );
  t.equal(map.ranks[0]!.env['NCCL_IB_HCA'], '=irdma-cvl01tf2:1');
});

t.test('--nic all gives every port to every rank; --nic none gives none', async (t) => {
  const all = planRankMap(nodes, { nodes: 1, ranksPerNode: 2, nic: 'all' });
  t.equal(all.ranks[0]!.nics.length, 4);
  const none = planRankMap(nodes, { nodes: 1, ranksPerNode: 2, nic: 'none' });
  t.same(none.ranks[0]!.nics, []);
  t.notOk('NCCL_IB_HCA' in none.ranks[0]!.env);
  t.notOk('CCL_MNIC' in none.ranks[0]!.env);
});

t.test('-n with cyclic distribution deals ranks round-robin', async (t) => {
  const map = planRankMap(nodes, { ntasks: 4, ranksPerNode: 2, distribution: 'cyclic' });
  t.same(
    map.nodes.map((n) => n.ranks),
    [
      [0, 2],
      [1, 3],
    ],
  );
  t.same(
    map.ranks.map((r) => [r.node, r.localRank]),
    [
      ['node1', 0],
      ['node2', 0],
      ['node1', 1],
      ['node2', 1],
    ],
  );
  t.equal(map.ranks[2]!.env['LOCAL_RANK'], '1');
});
