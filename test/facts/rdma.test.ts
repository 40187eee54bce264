// RDMA devices as ibv_devices/ibv_devinfo know them, from generated sysfs trees in the
// kernel's layout: InfiniBand, RoCE v1/v2 with IPv4 and IPv6 GIDs, iWARP (irdma) and eRDMA.
import t from 'tap';
import { readFacts } from '@rankd/topology';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { schemaErrors } from './schema.js';

const base: MachineSpec = { packages: 2, coresPerPackage: 2, threadsPerCore: 1 };

t.test('mlx5 InfiniBand: GUIDs, port, IPoIB netdev', (t) => {
  const root = buildSysfs(t.testdir(), {
    ...base,
    nics: [
      {
        name: 'ib0',
        pci: '0000:3b:00.0',
        numaNode: 0,
        type: 32,
        mtu: 4092,
        mac: '00:00:10:29:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:d4:e0:a2',
      },
    ],
    rdma: [
      {
        name: 'mlx5_0',
        pci: '0000:3b:00.0',
        nodeGuid: 'b8599f0300d4e0a2',
        sysImageGuid: 'b8599f0300d4e0a2',
        hcaType: 'MT4123',
        boardId: 'MT_0000000223',
        fwVer: '20.39.1002',
        ports: [
          {
            linkLayer: 'InfiniBand',
            rate: '200 Gb/sec (4X HDR)',
            lid: 5,
            smLid: 1,
            gids: [{ gid: 'fe80:0000:0000:0000:b859:9f03:00d4:e0a2' }, null],
          },
        ],
      },
    ],
  });
  const f = readFacts({ root });
  t.same(schemaErrors(f), []);
  const d = f.rdma.devices[0]!;
  t.same(
    [d.name, d.nodeGuid, d.sysImageGuid, d.nodeType, d.transport],
    ['mlx5_0', 'b8599f0300d4e0a2', 'b8599f0300d4e0a2', '1: CA', 'InfiniBand'],
  );
  t.same(
    [d.fwVersion, d.hcaType, d.boardId, d.vendorId, d.vendorPartId],
    ['20.39.1002', 'MT4123', 'MT_0000000223', '0x15b3', '0x101b'],
  );
  t.same([d.pciAddress, d.numaNode], ['0000:3b:00.0', 0]);
  const p = d.ports[0]!;
  t.same(
    [p.port, p.state, p.physState, p.linkLayer, p.rate, p.lid, p.smLid, p.lmc],
    [1, 'ACTIVE', 'LinkUp', 'InfiniBand', '200 Gb/sec (4X HDR)', 5, 1, 0],
  );
  t.same(p.gids, [
    {
      index: 0,
      gid: 'fe80:0000:0000:0000:b859:9f03:00d4:e0a2',
      type: 'IB/RoCE v1',
      netdev: null,
      scope: 'link-local',
      ipv4: null,
    },
  ]);
  t.equal(p.gidTableLength, 2);
  t.equal(p.netdev, 'ib0', 'InfiniBand ports find their IPoIB interface on the same PCI function');
  t.equal(f.nics.find((n) => n.name === 'ib0')!.rdmaDevice, 'mlx5_0');
  t.end();
});

t.test('RoCE v1 and v2, IPv4-mapped, link-local and global IPv6 GIDs, empty slots', (t) => {
  const nd = 'ens2f0np0';
  const root = buildSysfs(t.testdir(), {
    ...base,
    nics: [{ name: nd, pci: '0000:5e:00.0', numaNode: 1, mac: 'b8:59:9f:d4:e0:a3', speedMbps: 100000 }],
    rdma: [
      {
        name: 'mlx5_1',
        pci: '0000:5e:00.0',
        nodeGuid: 'b8599f0300d4e0a3',
        ports: [
          {
            linkLayer: 'Ethernet',
            rate: '100 Gb/sec (4X EDR)',
            gids: [
              { gid: 'fe80:0000:0000:0000:ba59:9fff:fed4:e0a3', type: 'IB/RoCE v1', netdev: nd },
              { gid: 'fe80:0000:0000:0000:ba59:9fff:fed4:e0a3', type: 'RoCE v2', netdev: nd },
              { gid: '0000:0000:0000:0000:0000:ffff:0a00:0001', type: 'IB/RoCE v1', netdev: nd },
              { gid: '0000:0000:0000:0000:0000:ffff:0a00:0001', type: 'RoCE v2', netdev: nd },
              null,
              null,
              { gid: 'fd00:0000:0000:0000:0000:0000:0000:0002', type: 'IB/RoCE v1', netdev: nd },
              { gid: 'fd00:0000:0000:0000:0000:0000:0000:0002', type: 'RoCE v2', netdev: nd },
            ],
          },
        ],
      },
    ],
  });
  const f = readFacts({ root });
  const p = f.rdma.devices[0]!.ports[0]!;
  t.same(
    p.gids.map((g) => [g.index, g.type, g.scope, g.ipv4, g.netdev]),
    [
      [0, 'IB/RoCE v1', 'link-local', null, nd],
      [1, 'RoCE v2', 'link-local', null, nd],
      [2, 'IB/RoCE v1', 'ipv4-mapped', '10.0.0.1', nd],
      [3, 'RoCE v2', 'ipv4-mapped', '10.0.0.1', nd],
      [6, 'IB/RoCE v1', 'global', null, nd],
      [7, 'RoCE v2', 'global', null, nd],
    ],
    'empty slots are skipped, indexes keep their table position',
  );
  t.equal(p.gidTableLength, 8);
  t.same([p.linkLayer, p.netdev], ['Ethernet', nd]);
  t.same([f.rdma.devices[0]!.numaNode, f.rdma.devices[0]!.transport], [1, 'InfiniBand']);
  const nic = f.nics.find((n) => n.name === nd)!;
  t.same([nic.rdmaDevice, nic.numaNode, nic.speedMbps, nic.mac], ['mlx5_1', 1, 100000, 'b8:59:9f:d4:e0:a3']);
  t.end();
});

t.test("iWARP irdma behind an auxiliary device takes the PCI function's NUMA node", (t) => {
  const root = buildSysfs(t.testdir(), {
    ...base,
    nics: [{ name: 'ens801f0', pci: '0000:af:00.0', numaNode: 1 }],
    rdma: [
      {
        name: 'irdma-cvl12tf2',
        pci: '0000:af:00.0',
        auxDevice: 'ice.roce.0',
        nodeType: 'RNIC',
        nodeGuid: '6805ca0000b1c2d3',
        fwVer: '1.60',
        ports: [
          {
            linkLayer: 'Ethernet',
            rate: '100 Gb/sec (4X EDR)',
            gids: [{ gid: '6805:cab1:c2d3:0000:0000:0000:0000:0000', netdev: 'ens801f0' }],
          },
        ],
      },
    ],
  });
  const f = readFacts({ root });
  const d = f.rdma.devices[0]!;
  t.same([d.transport, d.nodeType, d.pciAddress, d.numaNode], ['iWARP', '4: RNIC', '0000:af:00.0', 1]);
  t.equal(f.nics[0]!.rdmaDevice, 'irdma-cvl12tf2');
  t.end();
});

t.test('eRDMA: its own PCI function, tied to the virtio netdev by its GID table', (t) => {
  const root = buildSysfs(t.testdir(), {
    ...base,
    nics: [{ name: 'eth0', pci: '0000:00:05.0', numaNode: -1, speedMbps: null }],
    rdma: [
      {
        name: 'erdma_0',
        pci: '0000:00:06.0',
        pciVendor: '0x1ded',
        pciDevice: '0x107f',
        nodeType: 'RNIC',
        nodeGuid: '00163e0000c0ffee',
        ports: [{ linkLayer: 'Ethernet', gids: [{ gid: 'fe80:0000:0000:0000:0216:3eff:fec0:ffee', netdev: 'eth0' }] }],
      },
    ],
  });
  const f = readFacts({ root });
  const d = f.rdma.devices[0]!;
  t.same(
    [d.name, d.transport, d.vendorId, d.numaNode, d.ports[0]!.netdev],
    ['erdma_0', 'iWARP', '0x1ded', null, 'eth0'],
  );
  const eth0 = f.nics[0]!;
  t.same([eth0.rdmaDevice, eth0.numaNode, eth0.speedMbps], ['erdma_0', null, null], 'numa_node -1 is unknown locality');
  t.end();
});

t.test('device order is natural: mlx5_2 before mlx5_10', (t) => {
  const dev = (i: number) => ({
    name: `mlx5_${i}`,
    pci: `0000:${(0x10 + i).toString(16)}:00.0`,
    nodeGuid: `b8599f0300d4e0${(0x10 + i).toString(16)}`,
    ports: [{ linkLayer: 'InfiniBand' as const }],
  });
  const root = buildSysfs(t.testdir(), { ...base, rdma: [dev(10), dev(2), dev(1)] });
  t.same(
    readFacts({ root }).rdma.devices.map((d) => d.name),
    ['mlx5_1', 'mlx5_2', 'mlx5_10'],
  );
  t.end();
});
