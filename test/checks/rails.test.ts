// planRails: the rails a net check measures and each node's end of them, on facts read by
// the agent's real facts reader from sysfs trees the fixture builder writes (RoCE,
// InfiniBand, iWARP, a node without the device). Captured trees list no live addresses, so
// each test gives the netdevs the addresses a live node would report.
import { join } from 'node:path';
import t from 'tap';
import { planRankMap } from '@rankd/planner';
import type { Facts } from '@rankd/protocol';
import { readFacts } from '@rankd/topology';
import { planRails, type CheckMember, type Endpoint } from '#controller/checks/rails';
import { buildSysfs, type MachineSpec, type RdmaPortSpec } from '../helpers/sysfs-fixture.js';
import { ipv4Gid, seed004RocePod } from '../helpers/machines.js';

type Addresses = Record<string, Array<{ family: 'inet' | 'inet6'; address: string }>>;

function member(dir: string, node: string, address: string | null, machine: MachineSpec, live: Addresses = {}) {
  const facts = readFacts({ root: buildSysfs(join(dir, node), machine) });
  return { node, address, facts: withAddresses(facts, live) } satisfies CheckMember;
}

function withAddresses(facts: Facts, live: Addresses): Facts {
  return {
    ...facts,
    nics: facts.nics.map((n) => ({
      ...n,
      addresses: (live[n.name] ?? []).map((a) => ({ ...a, prefixLength: a.family === 'inet' ? 24 : 64 })),
    })),
  };
}

const small = { packages: 1, coresPerPackage: 2, threadsPerCore: 1 } as const;

/** An InfiniBand HCA with an IPoIB netdev (ib0), the given ports. */
function ibNode(host: number, ports: RdmaPortSpec[]): MachineSpec {
  return {
    ...small,
    nics: [
      { name: 'eth0', pci: '0000:17:00.0', numaNode: 0, speedMbps: 25000 },
      { name: 'ib0', pci: '0000:3b:00.0', numaNode: 0, type: 32, speedMbps: 200000 },
    ],
    rdma: [{ name: 'mlx5_0', pci: '0000:3b:00.0', nodeGuid: `0c42a10300000${host}00`, ports }],
  };
}

const ibPort = (lid: number, state = 'ACTIVE'): RdmaPortSpec => ({
  linkLayer: 'InfiniBand',
  state,
  lid,
  smLid: 1,
  rate: '200 Gb/sec (4X HDR)',
  gids: [{ gid: `fe80:0000:0000:0000:0c42:a103:0000:${lid.toString(16).padStart(4, '0')}` }],
});

const endpointOf = (plans: ReturnType<typeof planRails>, rail: string, node: string): Endpoint | undefined =>
  plans.find((p) => p.rail.name === rail)?.endpoints.get(node);

t.test("RoCE: the planner's GID index, the device's port, the port netdev's IPv4", async (t) => {
  const dir = t.testdir();
  const members = [1, 2].map((h) =>
    member(dir, `pod-${h}`, `10.5.0.${h}`, seed004RocePod(h), {
      eth0: [{ family: 'inet', address: `10.5.0.${h}` }],
      net1: [
        { family: 'inet6', address: `fd00::${h}` },
        { family: 'inet', address: `172.16.0.${h}` },
      ],
    }),
  );
  const plans = planRails(members, undefined);
  t.same(
    plans.map((p) => p.rail),
    [{ name: 'mlx5_bond_0', kind: 'rdma', tools: ['ib_write_bw', 'ib_write_lat'] }],
  );
  t.same(endpointOf(plans, 'mlx5_bond_0', 'pod-2'), {
    address: '172.16.0.2',
    device: 'mlx5_bond_0',
    ibPort: 1,
    gidIndex: 9,
  });
  // the index is the one a rank of a job on these nodes gets, not perftest's own pick
  const map = planRankMap(
    members.map((m) => ({ name: m.node, address: m.address, facts: m.facts })),
    {},
  );
  t.equal(map.ranks[1]!.nics[0]!.gidIndex, 9);
  t.equal(map.ranks[1]!.nics[0]!.gid, ipv4Gid('172.16.0.2'));
});

t.test('InfiniBand: no GID index (LID routing, as a rank), the port a rank gets', async (t) => {
  const dir = t.testdir();
  const members = [1, 2].map((h) =>
    // port 1 is down: a rank, and the probe, take port 2
    member(dir, `ib${h}`, `10.1.0.${h}`, ibNode(h, [ibPort(10 + h, 'DOWN'), ibPort(20 + h)]), {
      ib0: [{ family: 'inet', address: `192.168.50.${h}` }],
    }),
  );
  const plans = planRails(members, undefined);
  t.same(endpointOf(plans, 'mlx5_0', 'ib1'), { address: '192.168.50.1', device: 'mlx5_0', ibPort: 2 });
});

t.test('InfiniBand without an IPoIB address: the rank address carries the exchange', async (t) => {
  const dir = t.testdir();
  const members = [member(dir, 'ib1', '10.1.0.1', ibNode(1, [ibPort(11)]))];
  t.same(endpointOf(planRails(members, undefined), 'mlx5_0', 'ib1'), {
    address: '10.1.0.1',
    device: 'mlx5_0',
    ibPort: 1,
  });
  const v6 = [member(t.testdir(), 'ib6', 'fd00::6', ibNode(6, [ibPort(16)]))];
  t.match(endpointOf(planRails(v6, undefined), 'mlx5_0', 'ib6'), {
    problem:
      /ib6: ib0 has no IPv4 address and its rank address is fd00::6, not IPv4; perftest exchanges its setup over IPv4/,
  });
});

t.test('a node without the device is a problem that names the device and what it has', async (t) => {
  const dir = t.testdir();
  const members = [
    member(dir, 'pod-1', '10.5.0.1', seed004RocePod(1), { net1: [{ family: 'inet', address: '172.16.0.1' }] }),
    member(dir, 'plain', '10.5.0.9', { ...small, nics: [{ name: 'eth0', pci: '0000:17:00.0' }] }),
    member(dir, 'ib1', '10.1.0.1', ibNode(1, [ibPort(11)])),
  ];
  const plans = planRails(members, undefined);
  t.same(
    plans.map((p) => p.rail.name),
    ['mlx5_0', 'mlx5_bond_0'],
    'every device with an active port on any node is a rail',
  );
  t.same(endpointOf(plans, 'mlx5_bond_0', 'plain'), {
    problem: 'plain has no RDMA device mlx5_bond_0 with an active port (active: none)',
  });
  t.same(endpointOf(plans, 'mlx5_bond_0', 'ib1'), {
    problem: 'ib1 has no RDMA device mlx5_bond_0 with an active port (active: mlx5_0)',
  });
  t.same(endpointOf(plans, 'mlx5_0', 'pod-1'), {
    problem: 'pod-1 has no RDMA device mlx5_0 with an active port (active: mlx5_bond_0)',
  });
  const unknown = planRails([{ node: 'new', address: '10.5.0.7', facts: null }, members[0]!], undefined);
  t.match(endpointOf(unknown, 'mlx5_bond_0', 'new'), { problem: 'new has not reported facts' });
});

t.test('a RoCE port without a usable GID is a problem, and so is one perftest cannot take', async (t) => {
  const dir = t.testdir();
  const noGid = seed004RocePod(3);
  noGid.rdma![0]!.ports[0]!.gids = [null, null];
  const bare = member(dir, 'pod-3', '10.5.0.3', noGid, { net1: [{ family: 'inet', address: '172.16.0.3' }] });
  t.same(endpointOf(planRails([bare], undefined), 'mlx5_bond_0', 'pod-3'), {
    problem: 'mlx5_bond_0 port 1 on pod-3 has no RoCE GID a rank could use',
  });
  // the IPv4 RoCE v2 entry at index 70: NCCL would take it, perftest's -x stops at 64
  const far = seed004RocePod(4);
  const gids = far.rdma![0]!.ports[0]!.gids!;
  far.rdma![0]!.ports[0]!.gids = [...gids.slice(0, 8), ...Array<null>(62).fill(null), gids[9]!];
  const high = member(dir, 'pod-4', '10.5.0.4', far, { net1: [{ family: 'inet', address: '172.16.0.4' }] });
  t.same(endpointOf(planRails([high], undefined), 'mlx5_bond_0', 'pod-4'), {
    problem: "mlx5_bond_0 port 1 on pod-4: a rank's GID index is 70, and perftest's -x takes 0 to 64",
  });
});

t.test('an iWARP device is a problem named as such, not a probe that fails', async (t) => {
  const machine: MachineSpec = {
    ...small,
    nics: [{ name: 'ens1', pci: '0000:5e:00.0', numaNode: 0, speedMbps: 100000 }],
    rdma: [
      {
        name: 'iwp94s0',
        pci: '0000:5e:00.0',
        nodeType: 'RNIC',
        nodeGuid: '3efdfefffe9a5c00',
        ports: [{ linkLayer: 'Ethernet', gids: [{ gid: '3efd:fefe:9a5c:0000:0000:0000:0000:0000' }] }],
      },
    ],
  };
  const m = member(t.testdir(), 'iw1', '10.7.0.1', machine, { ens1: [{ family: 'inet', address: '10.7.0.1' }] });
  t.same(endpointOf(planRails([m], undefined), 'iwp94s0', 'iw1'), {
    problem: "iwp94s0 on iw1 is an iWARP device, which rankd's perftest probes do not measure",
  });
});

t.test('--rail names an RDMA device, or a netdev measured over TCP with its IPv4', async (t) => {
  const dir = t.testdir();
  const members = [1, 2].map((h) =>
    member(dir, `pod-${h}`, `10.5.0.${h}`, seed004RocePod(h), {
      eth0: [{ family: 'inet', address: `10.5.0.${h}` }],
      net1: [
        { family: 'inet6', address: `fd00::${h}` },
        { family: 'inet', address: `172.16.0.${h}` },
      ],
    }),
  );
  const tcp = planRails(members, 'net1');
  t.same(
    tcp.map((p) => p.rail),
    [{ name: 'net1', kind: 'tcp', tools: ['iperf3'] }],
  );
  t.same(endpointOf(tcp, 'net1', 'pod-1'), { address: '172.16.0.1' }, 'the IPv4, not the IPv6 listed first');
  t.throws(
    () => planRails(members, 'eth1'),
    { code: 'RANKD_CHECK_UNKNOWN_RAIL', message: /pod-1 has no network interface eth1/ },
    'a netdev no node has is refused whole (checks-drain.test.ts: nothing is measured or drained)',
  );
  const rdma = planRails(members, 'mlx5_bond_0');
  t.same(
    rdma.map((p) => p.rail.kind),
    ['rdma'],
  );
  t.same(endpointOf(rdma, 'mlx5_bond_0', 'pod-1'), {
    address: '172.16.0.1',
    device: 'mlx5_bond_0',
    ibPort: 1,
    gidIndex: 9,
  });
});

t.test('--rail eth1 on nodes without RDMA: the netdev IPv4 of each node', async (t) => {
  const dir = t.testdir();
  const machine: MachineSpec = {
    ...small,
    nics: [
      { name: 'eth0', pci: '0000:17:00.0' },
      { name: 'eth1', pci: '0000:17:00.1' },
    ],
  };
  const members = [1, 2].map((h) =>
    member(dir, `n${h}`, `10.0.0.${h}`, machine, {
      eth0: [{ family: 'inet', address: `10.0.0.${h}` }],
      eth1: [{ family: 'inet', address: `10.20.0.${h}` }],
    }),
  );
  t.same(
    planRails(members, undefined).map((p) => [p.rail.name, [...p.endpoints.values()]]),
    [['tcp', [{ address: '10.0.0.1' }, { address: '10.0.0.2' }]]],
    'no RDMA anywhere: TCP over the rank address',
  );
  t.same([...planRails(members, 'eth1')[0]!.endpoints.values()], [{ address: '10.20.0.1' }, { address: '10.20.0.2' }]);
});
