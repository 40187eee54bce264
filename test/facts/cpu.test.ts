// CPU topology, NUMA and cgroup restrictions read from generated sysfs trees.
import t from 'tap';
import { readFacts } from '@rankd/topology';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { schemaErrors } from './schema.js';

t.test('bare metal: siblings i and i+P are one core (split numbering)', (t) => {
  const root = buildSysfs(t.testdir(), { packages: 2, coresPerPackage: 4, threadsPerCore: 2, numbering: 'split' });
  const f = readFacts({ root });
  t.same(schemaErrors(f), []);
  t.same(f.cpu.hardware, { packages: 2, numaNodes: 2, cores: 8, pus: 16 });
  t.same([f.cpu.packages, f.cpu.cores, f.cpu.pus, f.cpu.numaNodes], [2, 8, 16, 2]);
  t.same(
    f.cpu.coreList.map((c) => c.pus),
    [
      [0, 8],
      [1, 9],
      [2, 10],
      [3, 11],
      [4, 12],
      [5, 13],
      [6, 14],
      [7, 15],
    ],
  );
  t.same(
    f.cpu.coreList.map((c) => [c.package, c.coreId, c.numaNode]),
    [
      [0, 0, 0],
      [0, 1, 0],
      [0, 2, 0],
      [0, 3, 0],
      [1, 0, 1],
      [1, 1, 1],
      [1, 2, 1],
      [1, 3, 1],
    ],
  );
  const pu9 = f.cpu.puList!.find((p) => p.cpu === 9)!;
  t.same(
    [pu9.package, pu9.coreId, pu9.numaNode, pu9.threadSiblings],
    [0, 1, 0, [1, 9]],
    'each PU knows its package, core and node',
  );
  t.same(
    f.numa.nodes.map((n) => n.cpus),
    [
      [0, 1, 2, 3, 8, 9, 10, 11],
      [4, 5, 6, 7, 12, 13, 14, 15],
    ],
  );
  t.same(f.numa.distances, [
    [10, 21],
    [21, 10],
  ]);
  t.same(f.warnings, []);
  t.end();
});

t.test('cloud VM: siblings 2k and 2k+1 are one core (adjacent numbering)', (t) => {
  const root = buildSysfs(t.testdir(), { packages: 1, coresPerPackage: 4, threadsPerCore: 2, numbering: 'adjacent' });
  const f = readFacts({ root });
  t.same(
    f.cpu.coreList.map((c) => c.pus),
    [
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
    ],
  );
  t.same(f.cpu.hardware, { packages: 1, numaNodes: 1, cores: 4, pus: 8 });
  t.end();
});

t.test('offline CPUs: gone from PUs and cores, listed as offline', (t) => {
  const root = buildSysfs(t.testdir(), { packages: 1, coresPerPackage: 4, threadsPerCore: 2, offline: [5, 2, 6] });
  const f = readFacts({ root });
  t.same(f.cpu.offline, [2, 5, 6]);
  t.same(f.cpu.online, [0, 1, 3, 4, 7]);
  t.same(
    f.cpu.coreList.map((c) => c.pus),
    [[0, 4], [1], [3, 7]],
    'core 2 lost both threads, core 1 one',
  );
  t.same(f.cpu.hardware, { packages: 1, numaNodes: 1, cores: 3, pus: 5 });
  t.same(f.warnings, []);
  t.end();
});

t.test('old kernels: masks only, no *_list files, no online file', (t) => {
  const spec: MachineSpec = { packages: 2, coresPerPackage: 3, threadsPerCore: 2, offline: [7] };
  const old = readFacts({ root: buildSysfs(t.testdir(), { ...spec, masksOnly: true }) });
  const modern = readFacts({ root: buildSysfs(t.testdir(), { ...spec }) });
  t.same(old.cpu.coreList, modern.cpu.coreList);
  t.same(old.cpu.offline, [7]);
  t.same(
    old.numa.nodes.map((n) => n.cpus),
    modern.numa.nodes.map((n) => n.cpus),
  );
  t.same(old.cpu.hardware, modern.cpu.hardware);
  t.end();
});

t.test('cgroup v2 cpuset restricts the allowed view, not the hardware view', (t) => {
  const root = buildSysfs(t.testdir(), {
    packages: 2,
    coresPerPackage: 4,
    threadsPerCore: 2,
    cgroup: { version: 2, path: '/kubepods.slice/pod1', cpus: '0-3', mems: '0' },
  });
  const f = readFacts({ root });
  t.same(f.cpu.allowed, [0, 1, 2, 3]);
  t.same([f.cpu.packages, f.cpu.cores, f.cpu.pus, f.cpu.numaNodes], [1, 4, 4, 1]);
  t.same(f.cpu.hardware, { packages: 2, numaNodes: 2, cores: 8, pus: 16 });
  t.same(f.numa.allowed, [0]);
  t.equal(f.cpu.coreList.length, 8, 'coreList keeps the whole machine; planners filter with cpu.allowed');
  t.end();
});

t.test('cgroup v1 cpuset: second threads only still touch every core', (t) => {
  const root = buildSysfs(t.testdir(), {
    packages: 2,
    coresPerPackage: 4,
    threadsPerCore: 2,
    cgroup: { version: 1, path: '/slurm/uid_1000/job_42', cpus: '8-15', mems: '0-1' },
  });
  const f = readFacts({ root });
  t.same(f.cpu.allowed, [8, 9, 10, 11, 12, 13, 14, 15]);
  t.same([f.cpu.packages, f.cpu.cores, f.cpu.pus, f.cpu.numaNodes], [2, 8, 8, 2]);
  t.end();
});

t.test('NPS4: four NUMA nodes in one package, with their distances', (t) => {
  const root = buildSysfs(t.testdir(), { packages: 1, coresPerPackage: 8, threadsPerCore: 1, numaPerPackage: 4 });
  const f = readFacts({ root });
  t.same(
    f.numa.nodes.map((n) => n.cpus),
    [
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
    ],
  );
  t.same(f.numa.distances[0], [10, 12, 12, 12]);
  t.same(
    f.cpu.coreList.map((c) => c.numaNode),
    [0, 0, 1, 1, 2, 2, 3, 3],
  );
  t.same(f.cpu.hardware, { packages: 1, numaNodes: 4, cores: 8, pus: 8 });
  t.end();
});

t.test('CPU-less NUMA nodes (HBM, CXL) and NVIDIA GPU-memory nodes', (t) => {
  const root = buildSysfs(t.testdir(), {
    packages: 2,
    coresPerPackage: 2,
    threadsPerCore: 1,
    cpulessNodes: [
      { memKb: 64 * 1024 * 1024, initiators: [0] },
      { memKb: 96 * 1024 * 1024, nvidiaGpu: '0000:17:00.0' },
    ],
    gpus: [{ pci: '0000:17:00.0', numaNode: 0, model: 'NVIDIA GH200 480GB' }],
  });
  const f = readFacts({ root });
  t.same(
    f.numa.nodes.map((n) => [n.id, n.cpuless, n.memTotalKb, n.gpuMemory ?? null]),
    [
      [0, false, 16777216, null],
      [1, false, 16777216, null],
      [2, true, 67108864, null],
      [3, true, 100663296, '0000:17:00.0'],
    ],
  );
  t.equal(f.numa.distances.length, 4);
  t.same(f.numa.distances[2], [31, 31, 10, 31]);
  t.equal(f.cpu.hardware.numaNodes, 3, 'the GPU-memory node is not counted, as hwloc hides it');
  t.equal(f.cpu.numaNodes, 3);
  t.end();
});

t.test('a kernel without NUMA: one node 0 holding every CPU, said so', (t) => {
  const root = buildSysfs(t.testdir(), { packages: 1, coresPerPackage: 2, threadsPerCore: 2, numaPerPackage: 0 });
  const f = readFacts({ root });
  t.same(
    f.numa.nodes.map((n) => [n.id, n.cpus]),
    [[0, [0, 1, 2, 3]]],
  );
  t.equal(f.cpu.hardware.numaNodes, 1);
  t.same(
    f.warnings.map((w) => w.code),
    ['FACTS_INFERRED'],
  );
  t.same(schemaErrors(f), []);
  t.end();
});

t.test('memory: totals, huge pages per node and the memlock limits', (t) => {
  const root = buildSysfs(t.testdir(), {
    packages: 2,
    coresPerPackage: 1,
    threadsPerCore: 1,
    memPerNodeKb: 1048576,
    hugepages: [
      { sizeKb: 2048, perNode: 512, freePerNode: 500 },
      { sizeKb: 1048576, perNode: 0 },
    ],
    memlock: { soft: 65536, hard: 'unlimited' },
  });
  const f = readFacts({ root });
  t.equal(f.memory.totalKb, 2097152);
  t.same(f.memory.hugepages, [
    { sizeKb: 2048, total: 1024, free: 1000 },
    { sizeKb: 1048576, total: 0, free: 0 },
  ]);
  t.same(f.numa.nodes[1]!.hugepages, [
    { sizeKb: 2048, total: 512, free: 500 },
    { sizeKb: 1048576, total: 0, free: 0 },
  ]);
  t.same(
    f.memory.memlock,
    { agentSoft: 65536, agentHard: null, ranks: null },
    'null is unlimited; ranks get the hard limit',
  );
  t.end();
});

t.test('memlock for ranks: the hard limit, or unlimited with CAP_SYS_RESOURCE', (t) => {
  const spec: MachineSpec = {
    packages: 1,
    coresPerPackage: 1,
    threadsPerCore: 1,
    memlock: { soft: 8388608, hard: 16777216 },
  };
  t.same(readFacts({ root: buildSysfs(t.testdir(), spec) }).memory.memlock, {
    agentSoft: 8388608,
    agentHard: 16777216,
    ranks: 16777216,
  });
  t.same(readFacts({ root: buildSysfs(t.testdir(), { ...spec, capSysResource: true }) }).memory.memlock, {
    agentSoft: 8388608,
    agentHard: 16777216,
    ranks: null,
  });
  t.end();
});

t.test('caches: each instance once, with the CPUs that share it', (t) => {
  const root = buildSysfs(t.testdir(), { packages: 2, coresPerPackage: 2, threadsPerCore: 2 });
  const caches = readFacts({ root }).cpu.caches!;
  const l3 = caches.filter((c) => c.level === 3);
  t.same(
    l3.map((c) => [c.id, c.cpus]),
    [
      [0, [0, 1, 4, 5]],
      [1, [2, 3, 6, 7]],
    ],
  );
  t.equal(caches.filter((c) => c.level === 1 && c.type === 'Data').length, 4, 'one L1d per core');
  t.end();
});
