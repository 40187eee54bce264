// The renderers print what numactl -H, lscpu -p, ibv_devices and ibv_devinfo print.
// On this machine they are compared with the real tools when those are installed; on
// generated trees, with the tools' documented layouts.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readFacts, renderFacts } from '@rankd/topology';
import { inetNtop6 } from '#topology/format/ibv-devinfo';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { cpuMask } from '../helpers/sysfs-fixture/tree.js';

function tool(cmd: string, args: string[]): string | null {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 20_000 });
  return r.status === 0 ? r.stdout : null;
}

const maskFree = (s: string) => s.replace(/^(node \d+ free:) \d+ MB$/gm, '$1 N MB');

const missing = (cmd: string, args: string[], hint: string) =>
  tool(cmd, args) === null ? `${cmd} is not installed here: comparison skipped (${hint})` : false;

t.test('numactl -H on this machine', { skip: missing('numactl', ['-H'], 'apt-get install numactl') }, (t) => {
  // free memory moves between two reads, and VM balloons move sizes: retry a few times
  let ours = '';
  let theirs = '';
  for (let i = 0; i < 5; i++) {
    ours = maskFree(renderFacts(readFacts(), 'numactl'));
    theirs = maskFree(tool('numactl', ['-H'])!);
    if (ours === theirs) break;
  }
  t.equal(ours, theirs, 'byte for byte, free figures aside');
  t.end();
});

t.test('lscpu -p on this machine', { skip: missing('lscpu', ['-p'], 'util-linux') }, (t) => {
  t.equal(renderFacts(readFacts(), 'lscpu'), tool('lscpu', ['-p']));
  t.end();
});

t.test('lstopo counts on this machine', { skip: missing('lstopo', ['--version'], 'apt-get install hwloc') }, (t) => {
  const xml = tool('lstopo', ['--of', 'xml'])!;
  const count = (type: string) => (xml.match(new RegExp(`type="${type}"`, 'g')) ?? []).length;
  const f = readFacts();
  t.same(
    { packages: f.cpu.packages, numaNodes: f.cpu.numaNodes, cores: f.cpu.cores, pus: f.cpu.pus },
    { packages: count('Package'), numaNodes: count('NUMANode'), cores: count('Core'), pus: count('PU') },
  );
  t.end();
});

t.test('numactl -H layout: several nodes, a CPU-less one, sparse ids, a cpuset', (t) => {
  const root = buildSysfs(t.testdir(), {
    packages: 2,
    coresPerPackage: 2,
    threadsPerCore: 2,
    memPerNodeKb: 4 * 1048576,
    freePerNodeKb: 1048576 + 512,
    cpulessNodes: [{ memKb: 2 * 1048576 }],
    distances: [
      [10, 21, 17],
      [21, 10, 28],
      [17, 28, 10],
    ],
    cgroup: { version: 2, cpus: '0-7', mems: '0-1' },
  });
  t.equal(
    renderFacts(readFacts({ root }), 'numactl'),
    [
      'available: 3 nodes (0-1)',
      'node 0 cpus: 0 1 4 5',
      'node 0 size: 4096 MB',
      'node 0 free: 1024 MB',
      'node 1 cpus: 2 3 6 7',
      'node 1 size: 4096 MB',
      'node 1 free: 1024 MB',
      'node 2 cpus:',
      'node 2 size: 2048 MB',
      'node 2 free: 1024 MB',
      'node distances:',
      'node   0   1   2 ',
      '  0:  10  21  17 ',
      '  1:  21  10  28 ',
      '  2:  17  28  10 ',
      '',
    ].join('\n'),
  );
  t.end();
});

t.test('lscpu -p layout: split siblings, two sockets, caches by sysfs id', (t) => {
  const root = buildSysfs(t.testdir(), { packages: 2, coresPerPackage: 2, threadsPerCore: 2, offline: [6] });
  t.equal(
    renderFacts(readFacts({ root }), 'lscpu'),
    [
      '# The following is the parsable format, which can be fed to other',
      '# programs. Each different item in every column has an unique ID',
      '# starting usually from zero.',
      '# CPU,Core,Socket,Node,,L1d,L1i,L2,L3',
      '0,0,0,0,,0,0,0,0',
      '1,1,0,0,,1,1,1,0',
      '2,2,1,1,,2,2,2,1',
      '3,3,1,1,,3,3,3,1',
      '4,0,0,0,,0,0,0,0',
      '5,1,0,0,,1,1,1,0',
      '7,3,1,1,,3,3,3,1',
      '',
    ].join('\n'),
    'CPU 6 is offline and not listed; CPU 7 shares the logical core of its sibling 3',
  );
  t.end();
});

/** lscpu -p of a tree, in the C locale its comment lines are written for. */
function lscpuOf(root: string): string | null {
  const env: NodeJS.ProcessEnv = { ...process.env, LC_ALL: 'C' };
  delete env['LANGUAGE'];
  const r = spawnSync('lscpu', ['-s', root, '-p'], { encoding: 'utf8', env, timeout: 20_000 });
  return r.status === 0 ? r.stdout : null;
}

const noLscpu = missing('lscpu', ['--version'], 'util-linux');
const lscpuSkip = noLscpu && process.env['CI'] !== 'true' ? noLscpu : false;

/** An ARM big.LITTLE /proc/cpuinfo: one entry per CPU, the CPU part naming its kind. */
function armCpuinfo(parts: string[]): string {
  return parts
    .map((part, cpu) =>
      [
        `processor\t: ${cpu}`,
        'BogoMIPS\t: 50.00',
        'CPU implementer\t: 0x41',
        'CPU variant\t: 0x0',
        `CPU part\t: ${part}`,
        '',
      ].join('\n'),
    )
    .join('\n');
}

t.test('lscpu -p rules on generated trees, against the real lscpu', { skip: lscpuSkip }, (t) => {
  const same = (root: string, what: string) => t.equal(renderFacts(readFacts({ root }), 'lscpu'), lscpuOf(root), what);
  const spec: MachineSpec = { packages: 2, coresPerPackage: 2, threadsPerCore: 2, offline: [2, 6] };

  same(buildSysfs(t.testdir() + '/online', spec), 'offline CPUs are not listed');

  same(
    buildSysfs(t.testdir() + '/masks', { ...spec, masksOnly: true }),
    'no cpu/online file: offline CPUs are listed, with empty core and socket',
  );

  const kept = buildSysfs(t.testdir() + '/kept', spec);
  const topo = join(kept, 'sys/devices/system/cpu/cpu2/topology');
  mkdirSync(topo, { recursive: true });
  for (const f of ['thread_siblings', 'core_cpus']) writeFileSync(join(topo, f), cpuMask([2, 6], 8) + '\n');
  for (const f of ['core_siblings', 'package_cpus']) writeFileSync(join(topo, f), cpuMask([2, 3, 6, 7], 8) + '\n');
  same(kept, 'an offline CPU that kept its topology holds a core id: the CPUs after it skip one');

  const flat = buildSysfs(t.testdir() + '/flat', { packages: 1, coresPerPackage: 4, threadsPerCore: 1 });
  rmSync(join(flat, 'sys/devices/system/node'), { recursive: true });
  same(flat, 'no NUMA in sysfs: the Node column is empty');

  const legacyless = buildSysfs(t.testdir() + '/legacyless', { packages: 1, coresPerPackage: 2, threadsPerCore: 2 });
  for (const cpu of [0, 1, 2, 3])
    for (const f of ['thread_siblings', 'thread_siblings_list', 'core_siblings', 'core_siblings_list'])
      rmSync(join(legacyless, `sys/devices/system/cpu/cpu${cpu}/topology/${f}`));
  same(legacyless, 'only core_cpus/package_cpus: lscpu reads the legacy names, Core and Socket stay empty');

  const hybrid = buildSysfs(t.testdir() + '/hybrid', { packages: 1, coresPerPackage: 8, threadsPerCore: 1 });
  writeFileSync(
    join(hybrid, 'proc/cpuinfo'),
    armCpuinfo(['0xd87', '0xd87', '0xd85', '0xd85', '0xd85', '0xd87', '0xd87', '0xd85']),
  );
  same(hybrid, 'big.LITTLE: cores are numbered from 0 again in each run of /proc/cpuinfo');

  const untyped = buildSysfs(t.testdir() + '/untyped', { packages: 1, coresPerPackage: 2, threadsPerCore: 1 });
  writeFileSync(join(untyped, 'proc/cpuinfo'), 'processor\t: 0\n\nprocessor\t: 1\n');
  same(untyped, '/proc/cpuinfo names no model: every cell is empty, caches are not shown');
  t.end();
});

const roce: MachineSpec = {
  packages: 1,
  coresPerPackage: 2,
  threadsPerCore: 1,
  nics: [{ name: 'ens2f0np0', pci: '0000:5e:00.0', numaNode: 0 }],
  rdma: [
    {
      name: 'mlx5_1',
      pci: '0000:5e:00.0',
      nodeGuid: 'b8599f0300d4e0a3',
      fwVer: '28.39.1002',
      boardId: 'MT_0000000838',
      ports: [
        {
          linkLayer: 'Ethernet',
          gids: [
            { gid: 'fe80:0000:0000:0000:ba59:9fff:fed4:e0a3', type: 'IB/RoCE v1', netdev: 'ens2f0np0' },
            { gid: 'fe80:0000:0000:0000:ba59:9fff:fed4:e0a3', type: 'RoCE v2', netdev: 'ens2f0np0' },
            { gid: '0000:0000:0000:0000:0000:ffff:0a00:0001', type: 'IB/RoCE v1', netdev: 'ens2f0np0' },
            { gid: '0000:0000:0000:0000:0000:ffff:0a00:0001', type: 'RoCE v2', netdev: 'ens2f0np0' },
            null,
          ],
        },
      ],
    },
    {
      name: 'mlx5_0',
      pci: '0000:3b:00.0',
      nodeGuid: 'b8599f0300d4e0a2',
      ports: [
        { linkLayer: 'InfiniBand', lid: 12, smLid: 1, gids: [{ gid: 'fe80:0000:0000:0000:b859:9f03:00d4:e0a2' }] },
      ],
    },
  ],
};

t.test('ibv_devices layout', (t) => {
  const root = buildSysfs(t.testdir(), roce);
  t.equal(
    renderFacts(readFacts({ root }), 'ibv_devices'),
    '    device          \t   node GUID\n' +
      '    ------          \t----------------\n' +
      '    mlx5_0          \tb8599f0300d4e0a2\n' +
      '    mlx5_1          \tb8599f0300d4e0a3\n',
  );
  t.end();
});

t.test('ibv_devinfo -v layout, sysfs-derived lines', (t) => {
  const root = buildSysfs(t.testdir(), roce);
  t.equal(
    renderFacts(readFacts({ root }), 'ibv_devinfo'),
    [
      'hca_id:\tmlx5_0',
      '\ttransport:\t\t\tInfiniBand (0)',
      '\tfw_ver:\t\t\t\t28.39.1002',
      '\tnode_guid:\t\t\tb859:9f03:00d4:e0a2',
      '\tsys_image_guid:\t\t\tb859:9f03:00d4:e0a2',
      '\tvendor_part_id:\t\t\t4123',
      '\thw_ver:\t\t\t\t0x0',
      '\tphys_port_cnt:\t\t\t1',
      '\t\tport:\t1',
      '\t\t\tstate:\t\t\tPORT_ACTIVE (4)',
      '\t\t\tsm_lid:\t\t\t1',
      '\t\t\tport_lid:\t\t12',
      '\t\t\tport_lmc:\t\t0x00',
      '\t\t\tlink_layer:\t\tInfiniBand',
      '\t\t\tgid_tbl_len:\t\t1',
      '\t\t\tphys_state:\t\tLINK_UP (5)',
      '\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:b859:9f03:00d4:e0a2',
      '',
      'hca_id:\tmlx5_1',
      '\ttransport:\t\t\tInfiniBand (0)',
      '\tfw_ver:\t\t\t\t28.39.1002',
      '\tnode_guid:\t\t\tb859:9f03:00d4:e0a3',
      '\tsys_image_guid:\t\t\tb859:9f03:00d4:e0a3',
      '\tvendor_part_id:\t\t\t4123',
      '\thw_ver:\t\t\t\t0x0',
      '\tboard_id:\t\t\tMT_0000000838',
      '\tphys_port_cnt:\t\t\t1',
      '\t\tport:\t1',
      '\t\t\tstate:\t\t\tPORT_ACTIVE (4)',
      '\t\t\tsm_lid:\t\t\t0',
      '\t\t\tport_lid:\t\t0',
      '\t\t\tport_lmc:\t\t0x00',
      '\t\t\tlink_layer:\t\tEthernet',
      '\t\t\tgid_tbl_len:\t\t5',
      '\t\t\tphys_state:\t\tLINK_UP (5)',
      '\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:ba59:9fff:fed4:e0a3, RoCE v1',
      '\t\t\tGID[  1]:\t\tfe80::ba59:9fff:fed4:e0a3, RoCE v2',
      '\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0a00:0001, RoCE v1',
      '\t\t\tGID[  3]:\t\t::ffff:10.0.0.1, RoCE v2',
      '',
      '',
    ].join('\n'),
  );
  t.end();
});

t.test("RoCE v2 GIDs print as glibc's inet_ntop prints them", (t) => {
  const w = (s: string) => s.split(':').map((x) => parseInt(x, 16));
  t.equal(inetNtop6(w('0000:0000:0000:0000:0000:ffff:c0a8:0a01')), '::ffff:192.168.10.1');
  t.equal(inetNtop6(w('fe80:0000:0000:0000:0e42:a1ff:fe2c:7b1a')), 'fe80::e42:a1ff:fe2c:7b1a');
  t.equal(
    inetNtop6(w('2001:0db8:0000:0000:0001:0000:0000:0001')),
    '2001:db8::1:0:0:1',
    'the first of two equal zero runs',
  );
  t.equal(inetNtop6(w('fd00:0000:0000:0000:0000:0000:0000:0000')), 'fd00::');
  t.equal(inetNtop6(w('0000:0000:0000:0000:0000:0000:0000:0001')), '::1');
  t.equal(inetNtop6(w('2001:0db8:0001:0002:0003:0004:0005:0006')), '2001:db8:1:2:3:4:5:6');
  t.end();
});

t.test('summary names sockets, cores, nodes, NICs, RDMA, GPUs and warnings', (t) => {
  const root = buildSysfs(t.testdir(), { ...roce, gpus: [{ pci: '0000:17:00.0', numaNode: 0, model: 'NVIDIA L40S' }] });
  const s = renderFacts(readFacts({ root }), 'summary');
  t.match(s, /1 socket, 2 cores, 2 threads/);
  t.match(s, /node 0: cpus 0-1/);
  t.match(s, /ens2f0np0: up, .*numa 0, 0000:5e:00\.0, rdma mlx5_1/);
  t.match(s, /mlx5_1: InfiniBand, numa 0, port 1 ACTIVE Ethernet/);
  t.match(s, /nvidia #0 0000:17:00\.0: NVIDIA L40S, numa 0/);
  t.notMatch(s, /^warnings/m);
  t.end();
});
