// The fixture builder writes what the kernel writes: class entries as relative symlinks
// into devices/, node_guid with colons, port states with their number, GID attributes.
import t from 'tap';
import { lstatSync, readFileSync, readlinkSync, realpathSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildSysfs, machineLayout } from '../helpers/sysfs-fixture.js';

t.test('kernel layout of class entries and RDMA attributes', (t) => {
  const root = buildSysfs(t.testdir(), {
    packages: 1,
    coresPerPackage: 1,
    threadsPerCore: 1,
    nics: [{ name: 'ens1f0', pci: '0000:3b:00.0', numaNode: 0 }],
    rdma: [
      {
        name: 'mlx5_0',
        pci: '0000:3b:00.0',
        nodeGuid: 'b8599f0300d4e0a2',
        ports: [
          {
            linkLayer: 'Ethernet',
            state: 'DOWN',
            physState: 'Disabled',
            gids: [{ gid: 'fe80:0000:0000:0000:ba59:9fff:fed4:e0a2', type: 'RoCE v2', netdev: 'ens1f0' }, null],
          },
        ],
      },
    ],
  });
  const read = (p: string) => readFileSync(join(root, p), 'utf8');
  const ib = 'sys/class/infiniband/mlx5_0';
  t.ok(lstatSync(join(root, ib)).isSymbolicLink());
  t.equal(readlinkSync(join(root, ib)), '../../devices/pci0000:3b/0000:3b:00.0/infiniband/mlx5_0');
  t.equal(readlinkSync(join(root, 'sys/class/net/ens1f0')), '../../devices/pci0000:3b/0000:3b:00.0/net/ens1f0');
  t.equal(realpathSync(join(root, ib, 'device')), realpathSync(join(root, 'sys/devices/pci0000:3b/0000:3b:00.0')));
  t.equal(read(`${ib}/node_guid`), 'b859:9f03:00d4:e0a2\n');
  t.equal(read(`${ib}/node_type`), '1: CA\n');
  t.equal(read(`${ib}/ports/1/state`), '1: DOWN\n');
  t.equal(read(`${ib}/ports/1/phys_state`), '3: Disabled\n');
  t.equal(read(`${ib}/ports/1/gids/0`), 'fe80:0000:0000:0000:ba59:9fff:fed4:e0a2\n');
  t.equal(read(`${ib}/ports/1/gid_attrs/types/0`), 'RoCE v2\n');
  t.equal(read(`${ib}/ports/1/gid_attrs/ndevs/0`), 'ens1f0\n');
  t.equal(read(`${ib}/ports/1/gids/1`), '0000:0000:0000:0000:0000:0000:0000:0000\n', 'an empty slot reads as zeros');
  t.notOk(existsSync(join(root, ib, 'ports/1/gid_attrs/types/1')), 'and has no attributes');
  t.end();
});

t.test('CPU numbering and masks', (t) => {
  const split = machineLayout({ packages: 2, coresPerPackage: 3, threadsPerCore: 2 });
  t.same(split.siblingsOf(1), [1, 7]);
  const adjacent = machineLayout({ packages: 2, coresPerPackage: 3, threadsPerCore: 2, numbering: 'adjacent' });
  t.same(adjacent.siblingsOf(1), [0, 1]);
  const root = buildSysfs(t.testdir(), { packages: 2, coresPerPackage: 20, threadsPerCore: 1, offline: [3] });
  const topo = (p: string) => readFileSync(join(root, 'sys/devices/system/cpu', p), 'utf8');
  t.equal(topo('cpu0/topology/core_siblings'), '00,000ffff7\n', 'nr_cpu_ids=40: the top word is two digits wide');
  t.equal(topo('cpu0/topology/core_siblings_list'), '0-2,4-19\n');
  t.equal(topo('cpu20/topology/package_cpus'), 'ff,fff00000\n');
  t.equal(topo('offline'), '3\n');
  t.equal(topo('cpu3/online'), '0\n');
  t.notOk(existsSync(join(root, 'sys/devices/system/cpu/cpu3/topology')), 'offline CPUs have no topology/');
  t.end();
});
