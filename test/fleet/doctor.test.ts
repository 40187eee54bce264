// rankd doctor over agents that read generated machines: a memlock limit set too low on
// purpose, a RoCE port without a RoCE v2 GID, a port that is down, a NIC on one socket
// only, a kernel that differs; required paths; a host without an agent; and the TCP
// connection matrix between live agents.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildSysfs, type GidSpec, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { ipv4Gid } from '../helpers/machines.js';
import { fleetUnderTest } from './helpers.js';
import { scratchDir } from '../helpers/scratch.js';

interface CheckLike {
  node: string | null;
  check: string;
  status: 'PASS' | 'WARN' | 'FAIL';
  message: string;
  fix: string | null;
}
interface DoctorLike {
  nodes: Array<{ host: string; node: string | null; reachable: boolean; clockOffsetMs: number | null }>;
  checks: CheckLike[];
  matrix: {
    nodes: string[];
    addresses: Array<string | null>;
    cells: Array<Array<{ ok: boolean; rttMs: number | null; error: string | null } | null>>;
  } | null;
  summary: { pass: number; warn: number; fail: number };
}

const linkLocal = (host: number, nic: number) =>
  `fe80:0000:0000:0000:0200:00ff:fe${host.toString(16).padStart(2, '0')}:${(0x100 + nic).toString(16).padStart(4, '0')}`;

/** Two sockets, one RoCE NIC per listed socket; `v2: false` leaves only RoCE v1 entries in the GID table. */
function roceNode(
  host: number,
  opts: { nicSockets: number[]; v2: boolean; memlock: number | 'unlimited'; kernel?: string; downSocket?: number },
): MachineSpec {
  const sockets = [...opts.nicSockets, ...(opts.downSocket === undefined ? [] : [opts.downSocket])];
  return {
    packages: 2,
    coresPerPackage: 4,
    threadsPerCore: 2,
    cpu: { modelName: 'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz' },
    host: { hostname: `roce${host}`, ...(opts.kernel ? { kernel: opts.kernel } : {}) },
    memlock: { soft: opts.memlock, hard: opts.memlock },
    nics: sockets.map((s, i) => ({
      name: `ens${i}`,
      pci: `0000:${(0x18 + 0x80 * s).toString(16)}:00.${i}`,
      numaNode: s,
      speedMbps: 100000,
    })),
    rdma: sockets.map((s, i) => {
      const netdev = `ens${i}`;
      const v4 = ipv4Gid(`10.${i}.0.${host}`);
      const gids: GidSpec[] = opts.v2
        ? [
            { gid: linkLocal(host, i), type: 'IB/RoCE v1', netdev },
            { gid: linkLocal(host, i), type: 'RoCE v2', netdev },
            { gid: v4, type: 'IB/RoCE v1', netdev },
            { gid: v4, type: 'RoCE v2', netdev },
          ]
        : [
            { gid: linkLocal(host, i), type: 'IB/RoCE v1', netdev },
            { gid: v4, type: 'IB/RoCE v1', netdev },
          ];
      const down = opts.downSocket === s && !opts.nicSockets.includes(s);
      return {
        name: `mlx5_${i}`,
        pci: `0000:${(0x18 + 0x80 * s).toString(16)}:00.${i}`,
        nodeGuid: `0c42a1030000${host.toString(16).padStart(2, '0')}${i.toString(16).padStart(2, '0')}`,
        hcaType: 'MT4125',
        fwVer: '22.39.1002',
        ports: [
          {
            linkLayer: 'Ethernet' as const,
            rate: '100 Gb/sec (4X EDR)',
            gids,
            ...(down ? { state: 'DOWN', physState: 'Disabled' } : {}),
          },
        ],
      };
    }),
  };
}

const find = (r: DoctorLike, node: string | null, check: string) =>
  r.checks.filter((c) => c.node === node && c.check === check);
const one = (r: DoctorLike, node: string | null, check: string) => {
  const found = find(r, node, check);
  if (found.length !== 1) throw new Error(`expected one ${check} check for ${node}, got ${JSON.stringify(found)}`);
  return found[0]!;
};

t.test(
  'the doctor finds a low memlock limit, a RoCE port without a v2 GID, a down port and a lonely NIC',
  async (t) => {
    // not t.testdir(): that name is shared by every run of this file, and a concurrent run's
    // teardown would pull the machines out from under these agents
    const dir = mkdtempSync(join(tmpdir(), 'rankd-doctor-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const good = buildSysfs(join(dir, 'good'), roceNode(1, { nicSockets: [0, 1], v2: true, memlock: 'unlimited' }));
    const lowlock = buildSysfs(
      join(dir, 'lowlock'),
      roceNode(2, { nicSockets: [0], downSocket: 1, v2: true, memlock: 65536 }),
    );
    const nov2 = buildSysfs(
      join(dir, 'nov2'),
      roceNode(3, { nicSockets: [0, 1], v2: false, memlock: 'unlimited', kernel: '5.14.0-362.el9.x86_64' }),
    );
    const f = await fleetUnderTest(t, [
      { name: 'good', root: good },
      { name: 'lowlock', root: lowlock },
      { name: 'nov2', root: nov2 },
    ]);
    t.equal((await f.importInventory('hosts.ini', '[lab]\ngood\nlowlock\nnov2\nghost\n')).code, 0);
    const present = scratchDir('rankd-model-');

    const r = await f.cli([
      'doctor',
      'lab',
      '--json',
      '--require-path',
      present,
      '--require-path',
      '/nonexistent/model',
    ]);
    t.equal(r.code, 1, 'a FAIL makes the exit status 1');
    const report = JSON.parse(r.stdout) as DoctorLike;

    t.match(one(report, 'lowlock', 'memlock'), {
      status: 'FAIL',
      message: /RLIMIT_MEMLOCK 64 KiB/,
      fix: /LimitMEMLOCK=infinity/,
    });
    t.match(one(report, 'good', 'memlock'), { status: 'PASS', message: /unlimited/ });
    t.match(one(report, 'nov2', 'rdma.gid'), {
      status: 'FAIL',
      message: /no RoCE v2 GID with a routable address on mlx5_0 port 1 \(ens0\), mlx5_1 port 1 \(ens1\)/,
      fix: /give ens0 an IP address/,
    });
    t.match(one(report, 'good', 'rdma.gid'), { status: 'PASS', message: /index 3, 10\.0\.0\.1/ });
    t.match(one(report, 'lowlock', 'rdma.port'), {
      status: 'WARN',
      message: /1 of 2 RDMA ports not ACTIVE: mlx5_1 port 1 is DOWN \(Disabled\)/,
      fix: /ip link set ens1 up/,
    });
    t.match(one(report, 'good', 'rdma.port'), { status: 'PASS', message: '2 RDMA ports ACTIVE' });
    t.match(one(report, 'lowlock', 'rdma.numa'), {
      status: 'WARN',
      message: /ranks on NUMA node 1 have no local RDMA NIC \(mlx5_0 on node 0\)/,
    });
    t.match(one(report, 'good', 'rdma.numa'), { status: 'PASS' });
    t.match(one(report, 'good', 'launcher'), {
      status: 'PASS',
      message: /^rank supervisor \d+ at \/\S+\/rank-supervisor: it pins ranks itself$/,
    });
    t.match(one(report, 'nov2', 'same.kernel'), {
      status: 'WARN',
      message: /nov2 has 5\.14\.0-362\.el9\.x86_64.*2 of 3 nodes have 6\.8\.0-49-generic/,
    });
    t.match(one(report, 'good', 'same.kernel'), { status: 'PASS' });
    t.match(one(report, 'good', 'same.cpu'), {
      status: 'PASS',
      message: /same on all 3 nodes: 2 sockets × 4 cores, 16 PUs, 2 NUMA nodes/,
    });
    for (const node of ['good', 'lowlock', 'nov2']) {
      const paths = find(report, node, 'path');
      t.match(paths, [
        { status: 'PASS', message: `${present} is present (directory)` },
        {
          status: 'FAIL',
          message: '/nonexistent/model is missing (ENOENT)',
          fix: /mount or create \/nonexistent\/model/,
        },
      ]);
      t.match(one(report, node, 'clock'), { status: 'PASS' });
      t.match(one(report, node, 'memory.numa'), {
        status: 'PASS',
        message: /node 0: 8 GiB free of 16 GiB \(50%\); node 1: 8 GiB free of 16 GiB/,
      });
    }
    t.match(one(report, 'ghost', 'agent'), {
      status: 'FAIL',
      message: 'no agent has registered for this host',
      fix: /install and start rankd-agent on ghost/,
    });
    t.match(one(report, null, 'clock.skew'), { status: 'PASS' });
    t.same(
      report.nodes.map((n) => [n.host, n.reachable]),
      [
        ['good', true],
        ['lowlock', true],
        ['nov2', true],
        ['ghost', false],
      ],
    );
    t.equal(report.summary.fail, report.checks.filter((c) => c.status === 'FAIL').length);
    for (const c of report.checks)
      t.equal(c.fix === null, c.status === 'PASS', `${c.node} ${c.check}: a fix exactly when not PASS`);

    const text = await f.cli(['doctor', 'lowlock']);
    t.equal(text.code, 1);
    t.match(text.stdout, /^lowlock\n\s+FAIL\s+memlock\s+ranks get RLIMIT_MEMLOCK 64 KiB/m);
    t.match(text.stdout, /^\s+fix: set LimitMEMLOCK=infinity/m);
    t.match(text.stdout, /\d+ PASS, \d+ WARN, 1 FAIL over 1 host/);

    const clean = await f.cli(['doctor', 'good']);
    t.equal(clean.code, 0, 'no FAIL, exit 0');
  },
);

t.test('the connection matrix: every pair of agents probes each other over TCP', async (t) => {
  const f = await fleetUnderTest(t, ['m1', 'm2', 'm3']);
  const r = await f.cli(['doctor', 'all', '--matrix', '--iface', 'lo', '--json']);
  const report = JSON.parse(r.stdout) as DoctorLike;
  const matrix = report.matrix!;
  t.same(matrix.nodes, ['m1', 'm2', 'm3']);
  t.same(matrix.addresses, ['127.0.0.1', '127.0.0.1', '127.0.0.1'], 'the address of --iface from the facts');
  for (let i = 0; i < 3; i++) {
    for (let j = 0; j < 3; j++) {
      const cell = matrix.cells[i]![j];
      if (i === j) t.equal(cell, null);
      else
        t.ok(
          cell?.ok && cell.rttMs !== null && cell.rttMs >= 0,
          `${matrix.nodes[i]} → ${matrix.nodes[j]}: ${JSON.stringify(cell)}`,
        );
    }
  }
  for (const node of ['m1', 'm2', 'm3'])
    t.match(one(report, node, 'reach'), { status: 'PASS', message: /reaches all 2 peers over 127\.0\.0\.1/ });

  const text = await f.cli(['doctor', '--matrix']);
  t.match(
    text.stdout,
    /connection matrix \(TCP round trip in ms, row → column\):\n\s+from \\ to\s+m1\s+m2\s+m3\n\s+m1\s+-\s+[\d.]+\s+[\d.]+\n/,
  );

  const noIface = await f.cli(['doctor', 'm1:m2', '--matrix', '--iface', 'nosuch0', '--json']);
  const bad = JSON.parse(noIface.stdout) as DoctorLike;
  t.equal(noIface.code, 1);
  t.match(one(bad, 'm1', 'reach'), { status: 'FAIL', message: /m1 has no network interface nosuch0/ });
});
