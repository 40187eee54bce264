// The RDMA probes' argv and parsers (agent/src/fabric/tools.ts). The machine has no RDMA
// device, so the output is the fixtures in test/fixtures/perftest, built from perftest's own
// format strings (see their README); the argv is checked against what perftest's option
// parser accepts and needs on both sides.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  PORT_TAKEN,
  UnparsableOutput,
  clientArgs,
  parseMeasurement,
  parseWriteBw,
  parseWriteLat,
  serverArgs,
} from '#agent/fabric/tools';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, '../fixtures/perftest', name), 'utf8');
function refusal(parse: () => unknown): unknown {
  try {
    parse();
  } catch (err) {
    return err;
  }
  return null;
}

const roce = { device: 'mlx5_bond_0', ibPort: 1, gidIndex: 9, durationS: 2 };

t.test('ib_write_bw: both sides get the same test options, the client adds the server last', async (t) => {
  const server = serverArgs({ tool: 'ib_write_bw', ...roce }, '172.16.0.2', 29600);
  const client = clientArgs({ tool: 'ib_write_bw', ...roce }, '172.16.0.2', 29600, '172.16.0.1');
  const options = ['-d', 'mlx5_bond_0', '-i', '1', '-x', '9', '-p', '29600', '-b', '-D', '2', '--report_gbits'];
  t.same(server, [...options, '--report-both']);
  t.same(client, [...options, '--report-both', '172.16.0.2']);
  t.notOk(client.includes('172.16.0.1'), 'the bind address is not passed: the option is spelt differently by version');
});

t.test('ib_write_bw on InfiniBand: no -x, so perftest routes by LID', async (t) => {
  const ib = { tool: 'ib_write_bw' as const, device: 'mlx5_0', ibPort: 2, durationS: 5 };
  const args = clientArgs(ib, '10.1.0.2', 29601);
  t.notOk(args.includes('-x'));
  t.same(args.slice(0, 6), ['-d', 'mlx5_0', '-i', '2', '-p', '29601']);
  t.equal(args.at(-1), '10.1.0.2');
});

t.test('ib_write_lat: no -b (perftest refuses it in latency tests), the same -n on both sides', async (t) => {
  const server = serverArgs({ tool: 'ib_write_lat', ...roce }, '172.16.0.2', 29602);
  const client = clientArgs({ tool: 'ib_write_lat', ...roce }, '172.16.0.2', 29602);
  t.same(server, ['-d', 'mlx5_bond_0', '-i', '1', '-x', '9', '-p', '29602', '-n', '10000']);
  t.same(client, [...server, '172.16.0.2']);
  t.notOk(client.includes('-b'));
  t.notOk(client.includes('-D'), 'a timed latency run prints another table (t_avg only)');
});

t.test('ib_write_bw: the directions come from the local and remote rows, not from the sum', async (t) => {
  const m = parseWriteBw(fixture('write_bw_roce_client.txt'));
  t.equal(m.forwardBps, 46.31e9, 'client → server: the Local row');
  t.equal(m.reverseBps, 45.87e9, 'server → client: the Remote row');
  t.equal(m.latencyUs, null);
  t.ok(Math.abs(m.forwardBps! + m.reverseBps! - 92.18e9) < 0.011e9, 'the two add up to the sum row (92.18)');
  t.not(m.forwardBps, 92.18e9 / 2, 'an uneven link is not halved into two equal directions');
});

t.test('ib_write_bw on InfiniBand: LID lines, no GID lines, the same tables', async (t) => {
  const m = parseMeasurement('ib_write_bw', fixture('write_bw_ib_client.txt'));
  t.equal(m.forwardBps, 196.42e9);
  t.equal(m.reverseBps, 196.38e9);
});

t.test('ib_write_bw under 0.1 Gbit/s: six-decimal rows are read as such', async (t) => {
  const m = parseWriteBw(fixture('write_bw_slow_client.txt'));
  t.equal(m.forwardBps, 0.060031e9);
  t.equal(m.reverseBps, 0.05007e9);
});

t.test('ib_write_bw without a row, without --report-both, or with nothing at all is refused', async (t) => {
  t.ok(refusal(() => parseWriteBw(fixture('write_bw_killed_client.txt'))) instanceof UnparsableOutput);
  t.throws(() => parseWriteBw(fixture('write_bw_killed_client.txt')), /printed its table header but no result row/);
  t.throws(
    () => parseWriteBw(fixture('write_bw_sum_only_client.txt')),
    /no local and remote results \(--report-both\)/,
    'a sum alone is not split into two made-up directions',
  );
  // a device that cannot be opened: perftest says so on stderr and prints nothing here
  t.throws(() => parseWriteBw(''), /ib_write_bw printed no result table/);
  t.throws(() => parseWriteBw(' Unable to find the Infiniband/RoCE device\n'), /no result table/);
});

t.test('ib_write_lat: t_typical, the median half round trip, is the one-way latency', async (t) => {
  const m = parseWriteLat(fixture('write_lat_roce_client.txt'));
  t.same(m, { forwardBps: null, reverseBps: null, latencyUs: 1.71 });
});

t.test('ib_write_lat without a row, or with nothing, is refused', async (t) => {
  const text = fixture('write_lat_roce_client.txt');
  const headerOnly = text.slice(0, text.indexOf(' 2       10000'));
  t.throws(() => parseWriteLat(headerOnly), /ib_write_lat printed its table header but no result row/);
  t.throws(() => parseWriteLat(''), /ib_write_lat printed no result table/);
  t.throws(() => parseWriteLat(fixture('write_bw_roce_client.txt')), /no result table/, 'a bandwidth table is not one');
});

t.test("a perftest server's bind failure reads as a port in use, so the next offered port is tried", async (t) => {
  t.ok(PORT_TAKEN.test("Couldn't listen to port 29600"));
  t.ok(PORT_TAKEN.test('iperf3: error - unable to start listener for connections: Address already in use'));
  t.notOk(PORT_TAKEN.test(' Unable to find the Infiniband/RoCE device'));
});

// perftest parses its options before it looks for the device, so the installed programs
// can judge every argv here: given a device no machine has, each stops at the device
// lookup if its options were accepted, and never opens a socket.
const perftestMissing = ['ib_write_bw', 'ib_write_lat'].some((p) => !existsSync(`/usr/bin/${p}`))
  ? 'perftest is not installed (scripts/test-deps.sh installs it)'
  : false;

function perftest(program: string, args: readonly string[]): { code: number | null; stderr: string } {
  const r = spawnSync(program, args, { encoding: 'utf8', timeout: 10_000, env: { PATH: '/usr/bin:/bin', LANG: 'C' } });
  return { code: r.status, stderr: `${r.stderr}${r.stdout}` };
}

t.test("the installed perftest's option parser accepts every argv built here", { skip: perftestMissing }, async (t) => {
  const params = [
    { device: 'rankd-no-such-dev', ibPort: 2, gidIndex: 64, durationS: 1 },
    { device: 'rankd-no-such-dev', ibPort: 1, durationS: 60 },
  ];
  for (const tool of ['ib_write_bw', 'ib_write_lat'] as const) {
    for (const p of params) {
      for (const args of [
        serverArgs({ tool, ...p }, '127.0.0.1', 29999),
        clientArgs({ tool, ...p }, '127.0.0.1', 29999, '127.0.0.1'),
      ]) {
        const r = perftest(tool, args);
        t.notMatch(r.stderr, /Parser function exited with Error/, `${tool} ${args.join(' ')}: options accepted`);
        t.match(r.stderr, /Unable to find the Infiniband\/RoCE device/, 'it stopped at the device lookup');
        t.equal(r.code, 1);
      }
    }
  }
  // the same parser refuses what this file says it refuses, so the assertions above can fail
  const tooHigh = perftest('ib_write_bw', ['-d', 'rankd-no-such-dev', '-x', '65', '-p', '29999']);
  t.match(tooHigh.stderr, /Gid index should be between 0 and 64[\s\S]*Parser function exited with Error/);
  const bidirLat = perftest('ib_write_lat', ['-d', 'rankd-no-such-dev', '-b', '-p', '29999']);
  t.match(bidirLat.stderr, /Bidirectional is only available in BW test/);
});
