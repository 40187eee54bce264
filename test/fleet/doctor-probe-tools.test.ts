// rankd doctor names the probe programs `rankd check net` needs and the package each comes
// from: iperf3 on every node, perftest (ib_write_bw, ib_write_lat) on nodes with RDMA
// devices. Real agents, each in a mount namespace of its own where /dev/null is bound over
// the programs this test takes away, so that the agent finds them missing exactly as on a
// node without the package; the host's programs stay as they are.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { ipv4Gid } from '../helpers/machines.js';
import { fleetUnderTest } from './helpers.js';

const TOOLS = ['iperf3', 'ib_write_bw', 'ib_write_lat'] as const;
type Tool = (typeof TOOLS)[number];

interface CheckLike {
  node: string | null;
  check: string;
  status: 'PASS' | 'WARN' | 'FAIL';
  message: string;
  fix: string | null;
}

const isRoot = process.getuid?.() === 0;
const installed = TOOLS.every((tool) => existsSync(`/usr/bin/${tool}`));
const skip = !isRoot
  ? 'hiding a program from one agent takes a mount namespace: run as root (CI does)'
  : !installed
    ? 'iperf3 and perftest must be installed in /usr/bin (scripts/test-deps.sh installs them)'
    : false;

/** Starts the agent in a private mount namespace with `hidden` replaced by /dev/null (not a file, so not found). */
function hiding(hidden: readonly Tool[]): string[] {
  const mounts = hidden.map((tool) => `mount --bind /dev/null /usr/bin/${tool}`);
  const script = [...mounts, 'exec "$0" "$@"'].join(' && ');
  return ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', script];
}

function machine(host: number, rdma: boolean): MachineSpec {
  return {
    packages: 1,
    coresPerPackage: 2,
    threadsPerCore: 1,
    host: { hostname: `n${host}` },
    memlock: { soft: 'unlimited', hard: 'unlimited' },
    nics: [{ name: 'ens1', pci: '0000:3b:00.0', numaNode: 0, speedMbps: 100000 }],
    rdma: rdma
      ? [
          {
            name: 'mlx5_0',
            pci: '0000:3b:00.0',
            nodeGuid: `0c42a1030000${host.toString(16).padStart(2, '0')}00`,
            ports: [
              {
                linkLayer: 'Ethernet',
                gids: [{ gid: ipv4Gid(`10.0.0.${host}`), type: 'RoCE v2', netdev: 'ens1' }],
              },
            ],
          },
        ]
      : [],
  };
}

t.test('the doctor names the missing probe programs and their packages', { skip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-doctor-tools-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const nodes = [
    { name: 'full', rdma: true, hidden: [] },
    { name: 'bare', rdma: true, hidden: ['iperf3', 'ib_write_bw', 'ib_write_lat'] },
    { name: 'nolat', rdma: true, hidden: ['ib_write_lat'] },
    { name: 'tcponly', rdma: false, hidden: ['ib_write_bw', 'ib_write_lat'] },
  ] as const;
  const f = await fleetUnderTest(
    t,
    nodes.map((n, i) => ({
      name: n.name,
      root: buildSysfs(join(dir, n.name), machine(i + 1, n.rdma)),
      ...(n.hidden.length > 0 ? { wrap: hiding(n.hidden) } : {}),
    })),
  );
  t.equal((await f.importInventory('hosts.ini', `[lab]\n${nodes.map((n) => n.name).join('\n')}\n`)).code, 0);
  const r = await f.cli(['doctor', 'lab', '--json']);
  const checks = (JSON.parse(r.stdout) as { checks: CheckLike[] }).checks;
  const tools = (node: string) => checks.filter((c) => c.node === node && c.check === 'fabric.tools');

  t.same(tools('full'), [
    {
      node: 'full',
      check: 'fabric.tools',
      status: 'PASS',
      message: 'iperf3 at /usr/bin/iperf3, ib_write_bw at /usr/bin/ib_write_bw, ib_write_lat at /usr/bin/ib_write_lat',
      fix: null,
    },
  ]);
  t.match(tools('bare'), [
    {
      status: 'WARN',
      message:
        'iperf3 is not installed: rankd check net cannot measure this node; ' +
        'ib_write_bw and ib_write_lat are not installed: rankd check net cannot measure mlx5_0 over RDMA',
      fix: 'install them: `apt install iperf3 perftest` (dnf: the same package names)',
    },
  ]);
  t.match(tools('nolat'), [
    {
      status: 'WARN',
      message: 'ib_write_lat is not installed: rankd check net cannot measure mlx5_0 over RDMA',
      fix: 'install it: `apt install perftest` (dnf: the same package names)',
    },
  ]);
  t.match(tools('tcponly'), [
    {
      status: 'PASS',
      message: 'iperf3 at /usr/bin/iperf3, no RDMA device, so perftest is not needed',
      fix: null,
    },
  ]);
  // the namespaces hid the programs from those agents only
  t.ok(
    TOOLS.every((tool) => existsSync(`/usr/bin/${tool}`)),
    "the host's programs are untouched",
  );
});
