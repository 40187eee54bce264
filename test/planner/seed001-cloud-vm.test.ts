// Seed 001: four 96-vCPU cloud VMs, siblings adjacent (2k, 2k+1), one NUMA node, eRDMA
// (iWARP) on eth0. The runbook computes `numactl -C 0,2,4,…,94` with a shell function
// and pins its one oneCCL worker to CPU 95.
import t from 'tap';
import { planRankMap } from '@rankd/planner';
import { renderRankMap } from '@rankd/planner/views';
import { seed001CloudVm } from '../helpers/machines.js';
import { evens, uniform } from './cluster.js';

const nodes = uniform(t.testdir(), seed001CloudVm, 4, 'xftest0', '192.168.0');

t.test('1 rank, -c 48 --comm-workers 1: the even CPUs, the worker on 95', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, cpusPerRank: 48, commWorkers: 1 });
  const r = map.ranks[0]!;
  t.same(r.cpus, evens(0, 94));
  t.same(r.commCpus, [95]);
  t.same(r.memNodes, [0]);
  t.equal(r.env['OMP_NUM_THREADS'], '48');
  t.equal(r.env['CCL_WORKER_COUNT'], '1');
  t.equal(r.env['CCL_WORKER_AFFINITY'], '95');
  t.equal(r.env['CCL_PROCESS_LAUNCHER'], 'none');
});

t.test('eRDMA is iWARP: used as a NIC, but no RoCE GID is chosen or exported', async (t) => {
  const map = planRankMap(nodes, { cpusPerRank: 48, commWorkers: 1 });
  t.same(map.ranks[2]!.nics, [
    { device: 'erdma_0', port: 1, netdev: 'eth0', linkLayer: 'Ethernet', gidIndex: null, gid: null },
  ]);
  const env = map.ranks[2]!.env;
  t.equal(env['FI_VERBS_IFACE'], 'eth0');
  t.equal(env['NCCL_SOCKET_IFNAME'], '=eth0');
  t.equal(env['CCL_MNIC_NAME'], 'erdma_0');
  t.notOk('NCCL_IB_GID_INDEX' in env);
  // numa_node -1 on a one-node VM is still local: no fallback note
  t.same(map.notes, []);
});

t.test('the oneCCL node table and the connection matrix of the seed', async (t) => {
  const map = planRankMap(nodes, {});
  t.equal(
    renderRankMap(map, 'table').split('\n\n')[0],
    [
      '    ID |               Node name |             IP | Ranks',
      '     0 |                xftest01 |    192.168.0.1 | 0',
      '     1 |                xftest02 |    192.168.0.2 | 1',
      '     2 |                xftest03 |    192.168.0.3 | 2',
      '     3 |                xftest04 |    192.168.0.4 | 3',
    ].join('\n'),
  );
  t.equal(
    renderRankMap(map, 'matrix'),
    [
      '    ID |           0            1            2            3 ',
      '     0 |         shm         RDMA         RDMA         RDMA ',
      '     1 |        RDMA          shm         RDMA         RDMA ',
      '     2 |        RDMA         RDMA          shm         RDMA ',
      '     3 |        RDMA         RDMA         RDMA          shm ',
      '',
    ].join('\n'),
  );
});

t.test('2 ranks on the VM split its 48 cores 24/24 by sibling pairs', async (t) => {
  const map = planRankMap(nodes, { nodes: 1, ranksPerNode: 2, commWorkers: 2 });
  t.same(map.ranks[0]!.cpus, evens(0, 46));
  t.same(map.ranks[0]!.commCpus, [45, 47]);
  t.same(map.ranks[1]!.cpus, evens(48, 94));
  t.same(map.ranks[1]!.commCpus, [93, 95]);
  t.equal(map.ranks[1]!.env['CCL_WORKER_AFFINITY'], '45,47,93,95');
});
