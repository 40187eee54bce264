// Seed 004: RoCE pods whose bonded port lists IPv6 entries and empty slots before the
// IPv4 ones, so the IPv4 RoCE v2 GID sits at index 9. The runbook greps sysfs for it;
// the planner walks the table as NCCL does.
import t from 'tap';
import { planRankMap } from '@rankd/planner';
import { renderRankMap } from '@rankd/planner/views';
import { ipv4Gid, seed004RocePod } from '../helpers/machines.js';
import { uniform } from './cluster.js';

const nodes = uniform(t.testdir(), seed004RocePod, 2, 'pod-', '10.5.0');

t.test('GID index 9, exported with the exact-match HCA', async (t) => {
  const map = planRankMap(nodes, {});
  t.same(map.ranks[1]!.nics, [
    { device: 'mlx5_bond_0', port: 1, netdev: 'net1', linkLayer: 'Ethernet', gidIndex: 9, gid: ipv4Gid('172.16.0.2') },
  ]);
  const env = map.ranks[1]!.env;
  t.equal(env['NCCL_IB_GID_INDEX'], '9');
  t.equal(env['NCCL_IB_HCA'], '=mlx5_bond_0:1');
  t.equal(env['NCCL_SOCKET_IFNAME'], '=net1');
  t.equal(env['GLOO_SOCKET_IFNAME'], 'net1');
  t.equal(env['UCX_NET_DEVICES'], 'mlx5_bond_0:1');
});

t.test('the table shows the choice with its IPv4 address', async (t) => {
  const map = planRankMap(nodes, {});
  const rankRows = renderRankMap(map, 'table').split('\n\n')[1]!.split('\n');
  t.match(rankRows[0], /^RANK +NODE +LOCAL +CPUS +COMM +MEM +NIC +GID +GPU$/);
  t.match(rankRows[1], /^0 +pod-1 +0 +0-63 +- +0-1 +mlx5_bond_0:1 +9\(172\.16\.0\.1\) +-$/);
});

t.test("NCCL_IB_ADDR_FAMILY and NCCL_IB_ROCE_VERSION_NUM overrides move the choice as they move NCCL's", async (t) => {
  const v6 = planRankMap(nodes, { env: { NCCL_IB_ADDR_FAMILY: 'AF_INET6' } });
  t.equal(v6.ranks[0]!.nics[0]!.gidIndex, 4);
  t.equal(v6.ranks[0]!.env['NCCL_IB_GID_INDEX'], '4');
  t.equal(v6.ranks[0]!.env['NCCL_IB_ADDR_FAMILY'], 'AF_INET6', 'the override itself is exported too');
  const v1 = planRankMap(nodes, { env: { NCCL_IB_ROCE_VERSION_NUM: '1' } });
  t.equal(v1.ranks[0]!.nics[0]!.gidIndex, 8);
  const fixed = planRankMap(nodes, { env: { NCCL_IB_GID_INDEX: '3' } });
  t.equal(fixed.ranks[0]!.nics[0]!.gidIndex, 3);
  t.equal(fixed.ranks[0]!.env['NCCL_IB_GID_INDEX'], '3');
});

t.test('--env overrides any computed variable; --env-profile mpi adds the MPI shims', async (t) => {
  const map = planRankMap(nodes, {
    env: { OMP_NUM_THREADS: '7', MASTER_ADDR: 'pod-1.svc' },
    envProfile: 'mpi',
    masterPort: 23456,
  });
  const env = map.ranks[1]!.env;
  t.equal(env['OMP_NUM_THREADS'], '7');
  t.equal(env['MASTER_ADDR'], 'pod-1.svc');
  t.same(Object.fromEntries(Object.entries(env).filter(([k]) => /^(PMI_|OMPI_|MPI_)/.test(k))), {
    PMI_RANK: '1',
    PMI_SIZE: '2',
    OMPI_COMM_WORLD_RANK: '1',
    OMPI_COMM_WORLD_SIZE: '2',
    OMPI_COMM_WORLD_LOCAL_RANK: '0',
    OMPI_COMM_WORLD_LOCAL_SIZE: '1',
    OMPI_COMM_WORLD_NODE_RANK: '0',
    MPI_LOCALRANKID: '0',
    MPI_LOCALNRANKS: '1',
  });
  const plain = planRankMap(nodes, {});
  t.notOk(Object.keys(plain.ranks[0]!.env).some((k) => /^(PMI_|OMPI_|MPI_|SLURM_)/.test(k)));
});

t.test('with live addresses, the interface holding the node address carries the sockets', async (t) => {
  // facts read on a live pod list addresses; eth0 is the pod network, net1 the RDMA one
  const live = nodes.map((n, i) => ({
    ...n,
    facts: {
      ...n.facts,
      nics: n.facts.nics.map((nic) =>
        nic.name === 'eth0'
          ? { ...nic, addresses: [{ family: 'inet' as const, address: `10.5.0.${i + 1}`, prefixLength: 24 }] }
          : nic,
      ),
    },
  }));
  const env = planRankMap(live, {}).ranks[1]!.env;
  t.equal(env['NCCL_SOCKET_IFNAME'], '=eth0');
  t.equal(env['GLOO_SOCKET_IFNAME'], 'eth0');
  t.equal(env['FI_VERBS_IFACE'], 'net1', 'libfabric verbs still follows the RDMA netdev');
});
