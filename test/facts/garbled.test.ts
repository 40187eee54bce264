// Garbled, truncated, padded and missing files: the snapshot is still produced, valid
// against the schema, with the unknown fields null and a warning that names the file.
import t from 'tap';
import { appendFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readFacts } from '@rankd/topology';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { schemaErrors } from './schema.js';

const machine: MachineSpec = {
  packages: 2,
  coresPerPackage: 2,
  threadsPerCore: 2,
  nics: [{ name: 'ens1f0', pci: '0000:3b:00.0', numaNode: 0 }],
  rdma: [
    {
      name: 'mlx5_0',
      pci: '0000:3b:00.0',
      nodeGuid: 'b8599f0300d4e0a2',
      ports: [
        {
          linkLayer: 'Ethernet',
          gids: [{ gid: 'fe80:0000:0000:0000:ba59:9fff:fed4:e0a2', type: 'RoCE v2', netdev: 'ens1f0' }],
        },
      ],
    },
  ],
  gpus: [{ pci: '0000:17:00.0', numaNode: 1, model: 'NVIDIA A100-SXM4-80GB' }],
};

const codes = (f: ReturnType<typeof readFacts>, path: string) =>
  f.warnings.filter((w) => w.path?.endsWith(path)).map((w) => w.code);

t.test('NUL padding changes nothing (files that end in NUL bytes)', (t) => {
  const clean = readFacts({ root: buildSysfs(t.testdir(), machine) });
  const root = buildSysfs(t.testdir(), machine);
  for (const f of [
    'sys/devices/system/cpu/online',
    'sys/devices/system/cpu/cpu1/topology/thread_siblings',
    'sys/devices/system/cpu/cpu1/topology/core_cpus',
    'sys/devices/system/cpu/cpu1/topology/physical_package_id',
    'sys/devices/system/node/node1/cpumap',
    'sys/devices/system/node/node1/distance',
    'sys/class/infiniband/mlx5_0/node_guid',
  ]) {
    appendFileSync(join(root, f), '\0\0\0\0');
  }
  const padded = readFacts({ root });
  t.same(padded.warnings, []);
  t.same(padded.cpu, clean.cpu);
  t.same(padded.numa, clean.numa);
  t.same(padded.rdma, clean.rdma);
  t.end();
});

t.test('garbled values become unknown with FACTS_GARBLED naming the file', (t) => {
  const root = buildSysfs(t.testdir(), machine);
  writeFileSync(join(root, 'sys/devices/system/cpu/cpu2/topology/core_id'), 'banana\n');
  writeFileSync(join(root, 'sys/devices/system/node/node1/distance'), '21');
  writeFileSync(join(root, 'sys/devices/system/node/node0/meminfo'), '');
  writeFileSync(join(root, 'sys/class/infiniband/mlx5_0/node_guid'), 'not-a-guid\n');
  writeFileSync(join(root, 'sys/class/infiniband/mlx5_0/ports/1/gids/0'), 'fe80:0000\n');
  writeFileSync(
    join(root, 'proc/self/limits'),
    'Limit                     Soft Limit           Hard Limit           Units     \n',
  );
  const f = readFacts({ root });
  t.same(schemaErrors(f), []);
  t.same(codes(f, 'cpu2/topology/core_id'), ['FACTS_GARBLED']);
  t.equal(f.cpu.coreList.find((c) => c.pus.includes(2))!.coreId, -1);
  t.same(codes(f, 'node1/distance'), ['FACTS_GARBLED']);
  t.same(f.numa.distances, [], 'a bad row makes the whole matrix unknown');
  t.same(codes(f, 'node0/meminfo'), ['FACTS_GARBLED']);
  t.equal(f.numa.nodes[0]!.memTotalKb, null);
  t.same(codes(f, 'mlx5_0/node_guid'), ['FACTS_GARBLED']);
  t.equal(f.rdma.devices[0]!.nodeGuid, null);
  t.same(codes(f, 'ports/1/gids/0'), ['FACTS_GARBLED']);
  t.same(f.rdma.devices[0]!.ports[0]!.gids, []);
  t.same(codes(f, '/proc/self/limits'), ['FACTS_GARBLED']);
  t.same(f.memory.memlock, { agentSoft: null, agentHard: null, ranks: null });
  t.same(f.cpu.hardware, { packages: 2, numaNodes: 2, cores: 4, pus: 8 }, 'the topology itself survives');
  t.end();
});

t.test('a garbled sibling mask on an old kernel leaves that CPU a core of its own', (t) => {
  const root = buildSysfs(t.testdir(), { ...machine, masksOnly: true });
  writeFileSync(join(root, 'sys/devices/system/cpu/cpu0/topology/thread_siblings'), 'zz,qq\n');
  const f = readFacts({ root });
  t.same(schemaErrors(f), []);
  t.ok(codes(f, 'cpu0/topology/thread_siblings').includes('FACTS_GARBLED'));
  t.same(f.cpu.pus, 8, 'every online CPU is still a PU');
  t.ok(f.cpu.coreList.some((c) => c.pus.length === 1 && c.pus[0] === 0));
  t.end();
});

t.test('an unreadable file (a directory where a file belongs) is FACTS_UNREADABLE', (t) => {
  const root = buildSysfs(t.testdir(), machine);
  rmSync(join(root, 'proc/meminfo'));
  mkdirSync(join(root, 'proc/meminfo'));
  const f = readFacts({ root });
  t.same(codes(f, '/proc/meminfo'), ['FACTS_UNREADABLE']);
  t.equal(f.memory.totalKb, null);
  t.end();
});

t.test('no CPU folder: CPUs counted from /proc/cpuinfo, said so', (t) => {
  const root = buildSysfs(t.testdir(), machine);
  rmSync(join(root, 'sys/devices/system/cpu'), { recursive: true });
  const f = readFacts({ root });
  t.same(schemaErrors(f), []);
  t.same(f.cpu.online, [0, 1, 2, 3, 4, 5, 6, 7]);
  t.ok(f.warnings.some((w) => w.code === 'FACTS_INFERRED'));
  t.end();
});

t.test('an empty root still gives a valid snapshot', (t) => {
  const f = readFacts({ root: t.testdir() });
  t.same(schemaErrors(f), []);
  t.same([f.cpu.pus, f.nics.length, f.rdma.devices.length, f.gpus.length], [0, 0, 0, 0]);
  t.ok(f.warnings.length > 0);
  t.end();
});

t.test('every file truncated to half, one at a time: never a throw, always schema-valid', (t) => {
  const root = buildSysfs(t.testdir(), machine);
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) files.push(p);
    }
  };
  walk(join(root, 'sys/devices'));
  walk(join(root, 'proc'));
  let failures = 0;
  for (const file of files) {
    const original = readFileSync(file);
    writeFileSync(file, original.subarray(0, Math.floor(original.length / 2)));
    try {
      const errors = schemaErrors(readFacts({ root }));
      if (errors.length) {
        failures++;
        t.fail(`${file.slice(root.length)} truncated: ${errors.join('; ')}`);
      }
    } catch (err) {
      failures++;
      t.fail(`${file.slice(root.length)} truncated: threw ${(err as Error).message}`);
    } finally {
      writeFileSync(file, original);
    }
  }
  t.equal(failures, 0, `${files.length} files truncated one by one`);
  t.ok(files.length > 100, 'the walk saw the whole tree');
  t.end();
});
