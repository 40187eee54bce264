// factsHash: equal for re-reads of an unchanged machine, different when it changes.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { factsHash, readFacts } from '@rankd/topology';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';

const machine: MachineSpec = {
  packages: 1,
  coresPerPackage: 2,
  threadsPerCore: 2,
  hugepages: [{ sizeKb: 2048, perNode: 64, freePerNode: 64 }],
  nics: [{ name: 'ens1f0', pci: '0000:3b:00.0', numaNode: 0 }],
  rdma: [
    {
      name: 'mlx5_0',
      pci: '0000:3b:00.0',
      nodeGuid: 'b8599f0300d4e0a2',
      ports: [{ linkLayer: 'Ethernet', gids: [null, null] }],
    },
  ],
};

t.test('time and free memory do not change the hash', (t) => {
  const root = buildSysfs(t.testdir(), machine);
  const first = readFacts({ root });
  writeFileSync(
    join(root, 'sys/devices/system/node/node0/meminfo'),
    'Node 0 MemTotal:       16777216 kB\nNode 0 MemFree:         1234567 kB\n',
  );
  writeFileSync(join(root, 'sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages'), '3\n');
  writeFileSync(
    join(root, 'proc/meminfo'),
    'MemTotal:       16777216 kB\nMemFree:          999999 kB\nMemAvailable:    1999999 kB\n',
  );
  const second = readFacts({ root });
  t.not(second.numa.nodes[0]!.memFreeKb, first.numa.nodes[0]!.memFreeKb, 'the volatile figures did move');
  t.equal(factsHash(second), factsHash(first));
  t.match(factsHash(first), /^[0-9a-f]{64}$/);
  t.end();
});

t.test('a link going down, a new GID or a narrower cpuset change it', (t) => {
  const root = buildSysfs(t.testdir(), machine);
  const before = factsHash(readFacts({ root }));
  writeFileSync(join(root, 'sys/devices/pci0000:3b/0000:3b:00.0/net/ens1f0/operstate'), 'down\n');
  const down = factsHash(readFacts({ root }));
  t.not(down, before, 'operstate');
  const port = 'sys/devices/pci0000:3b/0000:3b:00.0/infiniband/mlx5_0/ports/1';
  writeFileSync(join(root, port, 'gids/1'), '0000:0000:0000:0000:0000:ffff:0a00:0001\n');
  mkdirSync(join(root, port, 'gid_attrs/types'), { recursive: true });
  writeFileSync(join(root, port, 'gid_attrs/types/1'), 'RoCE v2\n');
  const gid = factsHash(readFacts({ root }));
  t.not(gid, down, 'GID added');
  writeFileSync(join(root, 'sys/fs/cgroup/cpuset.cpus.effective'), '0-1\n');
  t.not(factsHash(readFacts({ root })), gid, 'cpuset narrowed');
  t.end();
});
