// NICs, GPUs, fabric libraries and host identity from generated trees.
import t from 'tap';
import { readFacts } from '@rankd/topology';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { schemaErrors } from './schema.js';

const base: MachineSpec = { packages: 2, coresPerPackage: 2, threadsPerCore: 2 };

t.test('NICs: NUMA node of their PCI function, -1 as unknown, virtual ones marked', (t) => {
  const root = buildSysfs(t.testdir(), {
    ...base,
    nics: [
      { name: 'lo', mac: '00:00:00:00:00:00', mtu: 65536, state: 'unknown' },
      { name: 'ens1f0', pci: '0000:17:00.0', numaNode: 0, speedMbps: 25000, mtu: 9000 },
      { name: 'ens10f0', pci: '0000:b1:00.0', numaNode: 1, state: 'down', speedMbps: null },
      { name: 'eno1', pci: '0000:03:00.0', numaNode: -1, speedMbps: 1000 },
      { name: 'docker0' },
    ],
  });
  const f = readFacts({ root });
  t.same(schemaErrors(f), []);
  t.same(
    f.nics.map((n) => [n.name, n.numaNode, n.pciAddress, n.virtual, n.state, n.speedMbps, n.mtu]),
    [
      ['docker0', null, null, true, 'up', null, 1500],
      ['eno1', null, '0000:03:00.0', false, 'up', 1000, 1500],
      ['ens1f0', 0, '0000:17:00.0', false, 'up', 25000, 9000],
      ['ens10f0', 1, '0000:b1:00.0', false, 'down', null, 1500],
      ['lo', null, null, true, 'unknown', null, 65536],
    ],
  );
  t.ok(
    f.nics.every((n) => n.addresses.length === 0),
    'a captured tree has no live addresses',
  );
  t.end();
});

t.test('GPUs: NVIDIA by vendor and class, other accelerators by class, BMC VGA left out', (t) => {
  const root = buildSysfs(t.testdir(), {
    ...base,
    gpus: [
      { pci: '0000:ca:00.0', numaNode: 1, model: 'NVIDIA H100 80GB HBM3', device: '0x2330' },
      { pci: '0000:18:00.0', numaNode: 0, model: 'NVIDIA H100 80GB HBM3', device: '0x2330' },
      { pci: '0000:9a:00.0', vendor: '0x1002', device: '0x74a1', pciClass: '0x120000', numaNode: 1 },
      { pci: '0000:03:00.0', vendor: '0x1a03', device: '0x2000', pciClass: '0x030000', numaNode: 0 },
      { pci: '0000:4d:00.0', vendor: '0x1da3', device: '0x1020', pciClass: '0x120000', numaNode: 0 },
      { pci: '0000:5c:00.0', pciClass: '0x030000', numaNode: -1 },
    ],
  });
  const f = readFacts({ root });
  t.same(
    f.gpus.map((g) => [g.pciAddress, g.vendor, g.index, g.numaNode, g.model, g.pciClass]),
    [
      ['0000:18:00.0', 'nvidia', 0, 0, 'NVIDIA H100 80GB HBM3', '0x030200'],
      ['0000:4d:00.0', 'other', 0, 0, null, '0x120000'],
      ['0000:5c:00.0', 'nvidia', 1, null, null, '0x030000'],
      ['0000:9a:00.0', 'amd', 0, 1, null, '0x120000'],
      ['0000:ca:00.0', 'nvidia', 2, 1, 'NVIDIA H100 80GB HBM3', '0x030200'],
    ],
  );
  t.end();
});

t.test('libfabric and PSM3 where the seeds look for them', (t) => {
  const root = buildSysfs(t.testdir(), {
    ...base,
    files: ['/usr/lib64/libfabric.so.1', '/usr/lib64/libfabric/libpsm3-fi.so', '/opt/amazon/efa/lib64/libfabric.so'],
  });
  const f = readFacts({ root });
  t.same(f.fabric, {
    libfabric: ['/usr/lib64/libfabric.so.1', '/opt/amazon/efa/lib64/libfabric.so'],
    psm3: ['/usr/lib64/libfabric/libpsm3-fi.so'],
  });
  t.same(readFacts({ root: buildSysfs(t.testdir(), base) }).fabric, { libfabric: [], psm3: [] });
  t.end();
});

t.test('host identity from the tree, not from this machine', (t) => {
  const root = buildSysfs(t.testdir(), {
    ...base,
    host: {
      hostname: 'gpu-node-07',
      kernel: '5.15.0-122-generic',
      osPrettyName: 'Rocky Linux 9.4 (Blue Onyx)',
      arch: 'aarch64',
    },
    cpu: { modelName: 'Neoverse-V2' },
  });
  const f = readFacts({ root });
  t.same(f.host, {
    hostname: 'gpu-node-07',
    kernel: '5.15.0-122-generic',
    os: 'Rocky Linux 9.4 (Blue Onyx)',
    arch: 'aarch64',
  });
  t.equal(f.cpu.model, 'Neoverse-V2');
  t.equal(f.root, root);
  t.end();
});
