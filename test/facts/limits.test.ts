// What a Slurm job or a pod may use, read from generated sysfs trees: the memory cgroup's
// limit (the smallest over the cgroup and its ancestors, v1 and v2), and the GPUs that
// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES grant while sysfs shows every GPU.
import t from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from 'typebox/value';
import { Facts, type Gpu } from '@rankd/protocol';
import { readFacts, renderFacts } from '@rankd/topology';
import { buildSysfs, type GpuSpec, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { runCli } from '../helpers/daemons.js';

const GiB = 2 ** 30;
const small: MachineSpec = { packages: 1, coresPerPackage: 2, threadsPerCore: 1 };

t.test('cgroup v2: the smallest memory.max over the cgroup and its ancestors, and memory.high', (t) => {
  const root = buildSysfs(t.testdir(), {
    ...small,
    cgroup: {
      version: 2,
      path: '/kubepods.slice/pod1/ctr',
      memory: { '/kubepods.slice': { max: 64 * GiB }, '/kubepods.slice/pod1': { max: 8 * GiB, high: 6 * GiB } },
    },
  });
  const f = readFacts({ root });
  t.equal(f.memory.cgroupLimitKb, 8 * 1024 * 1024, 'the pod limit, below the slice and above the unlimited container');
  t.equal(f.memory.cgroupHighKb, 6 * 1024 * 1024);
  t.equal(f.memory.cgroupPath, 'cgroup2:/kubepods.slice/pod1/ctr');
  t.same(f.warnings, []);
  t.ok(Value.Check(Facts, f), 'schema-valid');
  t.match(
    renderFacts(f, 'summary'),
    /cgroup limit 8\.0 GiB \(memory\.high 6\.0 GiB; cgroup2:\/kubepods\.slice\/pod1\/ctr\)/,
  );
  t.end();
});

t.test('cgroup v2 without limits: null, said as "no cgroup limit"', (t) => {
  const root = buildSysfs(t.testdir(), { ...small, cgroup: { version: 2, path: '/user.slice/u' } });
  const f = readFacts({ root });
  t.equal(f.memory.cgroupLimitKb, null);
  t.equal(f.memory.cgroupHighKb, null);
  t.match(renderFacts(f, 'summary'), /no cgroup memory limit/);
  t.end();
});

t.test("cgroup v1: memory.limit_in_bytes of the job, the kernel's huge number meaning none", (t) => {
  const root = buildSysfs(t.testdir(), {
    ...small,
    cgroup: {
      version: 1,
      path: '/slurm/uid_1000/job_42/step_0',
      memory: { '/slurm/uid_1000/job_42': { max: 3 * GiB }, '/slurm/uid_1000/job_42/step_0': { max: 5 * GiB } },
    },
  });
  const f = readFacts({ root });
  t.equal(f.memory.cgroupLimitKb, 3 * 1024 * 1024, "the job's limit holds for its step");
  t.equal(f.memory.cgroupHighKb, null, 'v1 has no memory.high');
  t.equal(f.memory.cgroupPath, 'cgroup1:/slurm/uid_1000/job_42/step_0');
  t.same(f.warnings, []);

  const none = readFacts({ root: buildSysfs(t.testdir(), { ...small, cgroup: { version: 1, path: '/a' } }) });
  t.equal(none.memory.cgroupLimitKb, null, '9223372036854771712 is no limit');
  t.end();
});

t.test('a memory cgroup the mount does not show: unknown (field absent) with a warning, never "no limit"', (t) => {
  const root = buildSysfs(t.testdir(), { ...small, cgroup: { version: 1, path: '/docker/abc' } });
  rmSync(join(root, 'sys/fs/cgroup/memory/docker'), { recursive: true });
  const f = readFacts({ root });
  t.equal(f.memory.cgroupLimitKb, undefined);
  t.match(f.warnings, [{ code: 'FACTS_INCONSISTENT', path: '/sys/fs/cgroup/memory/docker/abc' }]);
  t.ok(Value.Check(Facts, f));
  t.end();
});

t.test('a garbled limit file is a warning, and the other levels still count', (t) => {
  const root = buildSysfs(t.testdir(), {
    ...small,
    cgroup: { version: 2, path: '/job/step', memory: { '/job': { max: 2 * GiB } } },
  });
  writeFileSync(join(root, 'sys/fs/cgroup/job/step/memory.max'), 'lots\n');
  const f = readFacts({ root });
  t.equal(f.memory.cgroupLimitKb, 2 * 1024 * 1024);
  t.match(f.warnings, [{ code: 'FACTS_GARBLED', path: '/sys/fs/cgroup/job/step/memory.max' }]);
  t.end();
});

t.test('the cpuset cgroup is named in the facts', (t) => {
  const root = buildSysfs(t.testdir(), { ...small, cgroup: { version: 1, path: '/rankd-test', cpus: '1' } });
  const f = readFacts({ root });
  t.equal(f.cpu.cpusetCgroup, 'cgroup1:/rankd-test');
  t.same(f.cpu.allowed, [1]);
  t.end();
});

// four NVIDIA GPUs in PCI order, two per NUMA node, and an AMD one the variables do not touch
const gpus: GpuSpec[] = [
  { pci: '0000:17:00.0', numaNode: 0, model: 'H100', uuid: 'GPU-aaaaaaaa-0000-0000-0000-000000000000' },
  { pci: '0000:3b:00.0', numaNode: 0, model: 'H100', uuid: 'GPU-bbbbbbbb-0000-0000-0000-000000000000' },
  { pci: '0000:86:00.0', numaNode: 1, model: 'H100', uuid: 'GPU-cccccccc-0000-0000-0000-000000000000' },
  { pci: '0000:af:00.0', numaNode: 1, model: 'H100', uuid: 'GPU-dddddddd-0000-0000-0000-000000000000' },
  { pci: '0000:d8:00.0', numaNode: 1, vendor: '0x1002', device: '0x740f' },
];
const gpuMachine: MachineSpec = { packages: 2, coresPerPackage: 2, threadsPerCore: 1, gpus };
const allowedOf = (list: Gpu[]) => list.map((g) => `${g.vendor}#${g.index}:${String(g.allowed)}`);

t.test('no variable: every GPU, no allowed field, no gpuVisibility', (t) => {
  const f = readFacts({ root: buildSysfs(t.testdir(), gpuMachine) });
  t.equal(f.gpus.length, 5);
  t.ok(f.gpus.every((g) => !('allowed' in g)));
  t.equal(f.gpuVisibility, undefined);
  t.equal(f.gpus[2]!.uuid, 'GPU-cccccccc-0000-0000-0000-000000000000', 'the UUID from the driver page');
  t.end();
});

t.test("Slurm's CUDA_VISIBLE_DEVICES=2,3: those two allowed, the rest kept and marked", (t) => {
  const root = buildSysfs(t.testdir(), gpuMachine);
  const f = readFacts({ root, gpuVisibility: { cudaVisibleDevices: '2,3' } });
  t.same(allowedOf(f.gpus), ['nvidia#0:false', 'nvidia#1:false', 'nvidia#2:true', 'nvidia#3:true', 'amd#0:undefined']);
  t.same(f.gpuVisibility, { from: ['CUDA_VISIBLE_DEVICES=2,3'], unmatched: [] });
  t.ok(Value.Check(Facts, f));
  const summary = renderFacts(f, 'summary');
  t.match(summary, /nvidia #0 0000:17:00\.0: H100, numa 0 \(not allowed\)/);
  t.match(summary, /nvidia #2 0000:86:00\.0: H100, numa 1\n/);
  t.match(summary, /allowed by CUDA_VISIBLE_DEVICES=2,3: nvidia #2,3/);
  t.end();
});

t.test("a pod's NVIDIA_VISIBLE_DEVICES of UUIDs, then CUDA_VISIBLE_DEVICES counting inside it", (t) => {
  const root = buildSysfs(t.testdir(), gpuMachine);
  const byUuid = readFacts({
    root,
    gpuVisibility: { nvidiaVisibleDevices: 'GPU-dddddddd-0000-0000-0000-000000000000,GPU-bbbbbbbb' },
  });
  t.same(allowedOf(byUuid.gpus).slice(0, 4), ['nvidia#0:false', 'nvidia#1:true', 'nvidia#2:false', 'nvidia#3:true']);
  const inside = readFacts({
    root,
    gpuVisibility: { nvidiaVisibleDevices: '1,3', cudaVisibleDevices: '1' },
  });
  t.same(
    allowedOf(inside.gpus).slice(0, 4),
    ['nvidia#0:false', 'nvidia#1:false', 'nvidia#2:false', 'nvidia#3:true'],
    "CUDA's index 1 is the second GPU the container shows: host GPU 3",
  );
  t.same(inside.gpuVisibility?.from, ['NVIDIA_VISIBLE_DEVICES=1,3', 'CUDA_VISIBLE_DEVICES=1']);
  const all = readFacts({ root, gpuVisibility: { nvidiaVisibleDevices: 'all' } });
  t.ok(
    all.gpus.slice(0, 4).every((g) => g.allowed === true),
    '"all" allows every GPU',
  );
  const none = readFacts({ root, gpuVisibility: { nvidiaVisibleDevices: 'void' } });
  t.ok(
    none.gpus.slice(0, 4).every((g) => g.allowed === false),
    '"void" allows none',
  );
  t.end();
});

t.test('CUDA stops at the first entry naming no GPU: the rest are unmatched, none of them allowed', (t) => {
  const root = buildSysfs(t.testdir(), gpuMachine);
  const f = readFacts({ root, gpuVisibility: { cudaVisibleDevices: '1,7,0' } });
  t.same(allowedOf(f.gpus).slice(0, 4), ['nvidia#0:false', 'nvidia#1:true', 'nvidia#2:false', 'nvidia#3:false']);
  t.same(f.gpuVisibility?.unmatched, ['7', '0']);
  const slurmNone = readFacts({ root, gpuVisibility: { cudaVisibleDevices: 'NoDevFiles' } });
  t.ok(
    slurmNone.gpus.slice(0, 4).every((g) => g.allowed === false),
    "Slurm's NoDevFiles: no GPU",
  );
  const empty = readFacts({ root, gpuVisibility: { cudaVisibleDevices: '' } });
  t.ok(
    empty.gpus.slice(0, 4).every((g) => g.allowed === false),
    'an empty list: no GPU',
  );
  t.end();
});

t.test("Slurm's ConstrainDevices (v1 devices.list): CUDA_VISIBLE_DEVICES counts the GPUs the job may open", (t) => {
  const root = buildSysfs(t.testdir(), {
    ...gpuMachine,
    cgroup: {
      version: 1,
      path: '/slurm/uid_1000/job_7/step_0',
      devices: ['c 1:3 rwm', 'c 195:255 rw', 'c 195:2 rw', 'c 195:3 rw', 'c 195:0 r'],
    },
  });
  const f = readFacts({ root, gpuVisibility: { cudaVisibleDevices: '0,1' } });
  t.same(
    allowedOf(f.gpus).slice(0, 4),
    ['nvidia#0:false', 'nvidia#1:false', 'nvidia#2:true', 'nvidia#3:true'],
    "CUDA's 0,1 are the job's GPUs 2 and 3 (read-only /dev/nvidia0 cannot be opened for CUDA)",
  );
  t.same(f.gpuVisibility?.from, ['devices cgroup cgroup1:/slurm/uid_1000/job_7/step_0', 'CUDA_VISIBLE_DEVICES=0,1']);
  t.same(f.warnings, []);
  const alone = readFacts({ root });
  t.same(allowedOf(alone.gpus).slice(0, 4), ['nvidia#0:false', 'nvidia#1:false', 'nvidia#2:true', 'nvidia#3:true']);
  t.match(
    renderFacts(alone, 'summary'),
    /allowed by devices cgroup cgroup1:\/slurm\/uid_1000\/job_7\/step_0: nvidia #2,3/,
  );

  const open = buildSysfs(t.testdir(), { ...gpuMachine, cgroup: { version: 1, path: '/a', devices: ['a *:* rwm'] } });
  const unrestricted = readFacts({ root: open });
  t.equal(unrestricted.gpuVisibility, undefined, '"a *:* rwm" restricts nothing');
  t.ok(unrestricted.gpus.every((g) => !('allowed' in g)));
  t.end();
});

t.test(
  'a machine without NVIDIA GPUs: the variables mark nothing (CUDA images set NVIDIA_VISIBLE_DEVICES=all)',
  (t) => {
    const f = readFacts({ root: buildSysfs(t.testdir(), small), gpuVisibility: { nvidiaVisibleDevices: 'all' } });
    t.same(f.gpus, []);
    t.equal(f.gpuVisibility, undefined);
    t.end();
  },
);

t.test("`rankd facts` reads the GPUs its own shell was granted (a Slurm job's CUDA_VISIBLE_DEVICES)", async (t) => {
  const root = buildSysfs(t.testdir(), gpuMachine);
  const r = await runCli(['facts', '--root', root, '--json'], {
    CUDA_VISIBLE_DEVICES: '1',
    NVIDIA_VISIBLE_DEVICES: '',
  });
  t.equal(r.code, 0, r.stderr);
  t.same(
    allowedOf((JSON.parse(r.stdout) as Facts).gpus).slice(0, 4),
    ['nvidia#0:false', 'nvidia#1:false', 'nvidia#2:false', 'nvidia#3:false'],
    'NVIDIA_VISIBLE_DEVICES="" exposes none, so CUDA index 1 names none',
  );
  // whatever the test's own environment holds, the CLI sees only CUDA_VISIBLE_DEVICES here
  const only = await runCli(['facts', '--root', root], {
    CUDA_VISIBLE_DEVICES: '1',
    NVIDIA_VISIBLE_DEVICES: undefined,
  });
  t.match(only.stdout, /allowed by CUDA_VISIBLE_DEVICES=1: nvidia #1\n/);
});
