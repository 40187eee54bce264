// Every flag is checked before any request: a table of bad flags across commands, each run
// as the built CLI against a real controller, exits 64 with `rankd: FLAG…` naming the flag,
// and the controller's own request counter (rankd_http_requests_total on GET /metrics, which
// counts every answer, refusals included) has not moved. One good command at the end moves
// it by exactly one: the counter does see what the CLI sends.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { runCli, startController } from '../helpers/daemons.js';

const controller = await startController();
t.teardown(() => controller.stop());
const env = { ...controller.clientEnv };

/** REST requests the controller has answered, its scrapes of /metrics left out. */
async function requestsAnswered(): Promise<number> {
  const r = await controller.api<string>('/metrics');
  if (r.status !== 200) throw new Error(`GET /metrics: ${r.status}`);
  let total = 0;
  for (const line of String(r.body).split('\n')) {
    const m = /^rankd_http_requests_total\{([^}]*)\} (\d+)$/.exec(line);
    if (m && !m[1]!.includes('route="/metrics"')) total += Number(m[2]);
  }
  return total;
}

const inventoryFile = join(t.testdir(), 'hosts.ini');
writeFileSync(inventoryFile, '[lab]\nn1\n');

/** The command line and the start of what it must say on stderr. */
const cases: Array<[string[], RegExp]> = [
  [['audit', '--since', '2x'], /^rankd: --since: "2x" is not a duration \(e\.g\. 30s, 15m, 2h\) or an ISO time\n$/],
  [['audit', '--since', 'yesterday'], /^rankd: --since: "yesterday" is not a duration/],
  [['audit', '--limit', '0'], /^rankd: --limit: 0 is out of range \(1 to 10000\)\n$/],
  [['audit', '--limit', '10001'], /^rankd: --limit: 10001 is out of range/],
  [['audit', '--limit', '1.5'], /^rankd: --limit: "1\.5" is not a whole number/],
  [['run', '--timeout', '0', '--', 'true'], /^rankd: --timeout: "0" is out of range \(above 0s, at most 31536000s\)/],
  [['run', '--timeout', '2x', '--', 'true'], /^rankd: --timeout: "2x" is not a number of seconds or a duration/],
  [['run', '--grace', '2h', '--', 'true'], /^rankd: --grace: "2h" is out of range \(0s to 3600s\)/],
  [['run', '--priority', '1001', '--', 'true'], /^rankd: --priority: 1001 is out of range \(-1000 to 1000\)/],
  [['run', '--mpi', 'mpich', '--', 'true'], /^rankd: --mpi: "mpich" is not one of pmi1, openmpi, none/],
  [['run', '--fail-policy', 'never', '--', 'true'], /^rankd: --fail-policy: "never" is not one of fail-fast, wait/],
  [
    ['run', '--distribution', 'diagonal', '--', 'true'],
    /^rankd: --distribution: "diagonal" is not one of block, cyclic/,
  ],
  [['run', '--name', 'n'.repeat(129), '--', 'true'], /^rankd: --name: is 129 characters long, more than 128/],
  [['run', '-n', '0', '--', 'true'], /^rankd: -n\/--ntasks must be between 1 and 1048576, not 0/],
  [['run', '--master-port', '70000', '--', 'true'], /^rankd: --master-port must be between 1 and 65535, not 70000/],
  [['plan', '--format', 'xml'], /^rankd: --format: "xml" is not one of table, matrix/],
  [['plan', '--json', '--format', 'table'], /^rankd: --json and --format table ask for two outputs/],
  [['plan', '--priority', 'high'], /^rankd: --priority: "high" is not a whole number/],
  [['plan', '--gpus-per-rank', '257'], /^rankd: --gpus-per-rank must be between 0 and 256, not 257/],
  [['logs', 'j1', '--offset', '-1'], /^rankd: --offset takes a byte offset, not "-1"/],
  [['logs', 'j1', '--stream', 'both'], /^rankd: --stream is out or err, not "both"/],
  [['logs', 'j1', '--rank', 'first'], /^rankd: --rank takes a rank number, not "first"/],
  [
    ['exec', 'all', '--timeout', '2d', '--', 'true'],
    /^rankd: --timeout: "2d" is out of range \(above 0s, at most 86400s\)/,
  ],
  [
    ['exec', 'all', '--max-output', '300000', '--', 'true'],
    /^rankd: --max-output: 300000 is out of range \(0 to 262144\)/,
  ],
  [['exec', 'all', '--env', '1X=y', '--', 'true'], /^rankd: --env takes NAME=VALUE, not "1X=y"/],
  [['ping', '--timeout', '601'], /^rankd: --timeout: "601" is out of range \(above 0s, at most 600s\)/],
  [['doctor', '--timeout', 'soon'], /^rankd: --timeout: "soon" is not a number of seconds or a duration/],
  [['join-command', '--ttl', '400d'], /^rankd: --ttl: "400d" is out of range \(1s to 31536000s\)/],
  [['join-token', 'create', '--uses', '0'], /^rankd: --uses: 0 is out of range \(1 to 100000\)/],
  [
    ['facts', 'n1', '--format', 'xml'],
    /^rankd: --format: "xml" is not one of summary, ibv_devices, ibv_devinfo, numactl, lscpu, json/,
  ],
  [['facts', 'n1', '--json', '--format', 'lscpu'], /^rankd: --json and --format lscpu ask for two outputs/],
  [['user', 'add', 'bob', '--role', 'king'], /^rankd: --role king: one of/],
  [
    ['token', 'create', '--description', 'x'.repeat(201)],
    /^rankd: --description: is 201 characters long, more than 200/,
  ],
  [['node', 'drain', 'n1', '--reason', ''], /^rankd: --reason: is empty/],
  [['inventory', 'import', inventoryFile, '--format', 'yaml'], /^rankd: --format is ini or hostfile, not "yaml"/],
];

t.test('each bad flag exits 64, names the flag, and sends nothing', async (t) => {
  const before = await requestsAnswered();
  for (const [args, message] of cases) {
    const r = await runCli(args, env);
    t.equal(r.code, 64, `rankd ${args.join(' ')}: exit 64`);
    t.match(r.stderr, message, `rankd ${args.join(' ')}: names the flag`);
    t.equal(r.stdout, '', `rankd ${args.join(' ')}: prints nothing on stdout`);
  }
  t.equal(await requestsAnswered(), before, `${cases.length} refusals, no request reached the controller`);

  // the help offers "2h": it works, and it is one request
  const good = await runCli(['audit', '--since', '2h', '--limit', '5'], env);
  t.equal(good.code, 0, good.stderr);
  t.match(good.stdout, /^TIME\s+USER/, 'the audit table');
  t.equal(await requestsAnswered(), before + 1, 'a good command is one request, and the counter saw it');
});
