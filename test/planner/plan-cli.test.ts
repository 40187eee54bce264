// `rankd plan` as a real process: offline on facts files written by `rankd facts
// --json`, and online against a controller whose agents read generated trees.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { formatCpuList, type RankMap } from '@rankd/protocol';
import { buildSysfs } from '../helpers/sysfs-fixture.js';
import { runCli, startAgent, startController, waitForNode } from '../helpers/daemons.js';
import { seed000Spr } from '../helpers/machines.js';
import { cpus } from './cluster.js';
import { pinDomainCpus, readHydraLine } from './hydra-line.js';

// about fifteen CLI, controller and agent processes: on a loaded 2-core machine each
// start-up can take seconds, so this file gets more than the default 180 s
t.setTimeout(420_000);

const dir = t.testdir();
const factsDir = join(dir, 'facts');
const roots = [1, 2].map((h) => buildSysfs(join(dir, `tree${h}`), seed000Spr(h)));
const seedFlags = ['--ppn', '2', '-c', '48', '--comm-workers', '4'];

t.before(async () => {
  mkdirSync(factsDir);
  for (const [i, root] of roots.entries()) {
    const r = await runCli(['facts', '--root', root, '--json']);
    if (r.code !== 0) throw new Error(`rankd facts failed: ${r.stderr}`);
    writeFileSync(join(factsDir, `node${i + 1}.json`), r.stdout);
  }
});

const offline = (...args: string[]) =>
  runCli(['plan', '--facts-dir', factsDir, '--address', 'node1=10.1.0.1', '--address', 'node2=10.1.0.2', ...args]);

t.test("offline --format json: the seed's CPU lists and environment", async (t) => {
  const r = await offline(...seedFlags, '--format', 'json', '--master-port', '29777');
  t.equal(r.code, 0, r.stderr);
  const map = JSON.parse(r.stdout) as RankMap;
  t.equal(map.worldSize, 4);
  t.same(
    map.ranks.map((x) => x.node),
    ['node1', 'node1', 'node2', 'node2'],
  );
  t.same(map.ranks[1]!.cpus, cpus('56-103'));
  t.same(map.ranks[1]!.commCpus, cpus('220-223'));
  t.equal(map.ranks[2]!.env['MASTER_ADDR'], '10.1.0.1');
  t.equal(map.ranks[2]!.env['MASTER_PORT'], '29777');
  t.equal(map.ranks[2]!.env['CCL_WORKER_AFFINITY'], '164,165,166,167,220,221,222,223');
  t.equal(map.ranks[2]!.env['NCCL_IB_HCA'], '=irdma-cvl01tf2:1,irdma-cvl02tf2:1');
});

t.test('offline --format bindings draws sockets and cores from the facts files', async (t) => {
  const b = await offline(
    '--nodelist',
    'node2',
    '--ppn',
    '2',
    '-c',
    '1',
    '--comm-workers',
    '1',
    '--format',
    'bindings',
  );
  t.equal(b.code, 0, b.stderr);
  const lines = b.stdout.split('\n');
  t.match(
    lines[0],
    /^\[node2\] MCW rank 0 bound to socket 0\[core 0\[hwt 0\]\], socket 0\[core 55\[hwt 1\]\]: \[B\.\/(\.\.\/){54}\.B\]\[(\.\.\/){55}\.\.\]$/,
  );
  t.match(lines[1], /^\[node2\] MCW rank 1 bound to socket 1\[core 56\[hwt 0\]\], socket 1\[core 111\[hwt 1\]\]: /);
});

t.test('offline --format machinefile and impi: hydra input for the seed, and --help says what they are', async (t) => {
  const m = await offline(...seedFlags, '--format', 'machinefile');
  t.equal(m.code, 0, m.stderr);
  t.equal(m.stdout, 'node1:2\nnode2:2\n');
  const i = await offline(...seedFlags, '--format', 'impi');
  t.equal(i.code, 0, i.stderr);
  t.match(i.stdout, /^mpiexec\.hydra -machinefile machinefile -np 4 -ppn 2 -l \\$/m);
  const pin = readHydraLine(i.stdout).genv['I_MPI_PIN_DOMAIN']!;
  t.same(pinDomainCpus(pin).map(formatCpuList), ['0-47,164-167', '56-103,220-223']);
  const help = await runCli(['plan', '--help']);
  t.match(help.stdout, /machinefile\s+\(hydra,\s+host:N\),\s+impi\s+\(an\s+mpiexec\.hydra\s+command/);
});

t.test("an impossible spec exits 65 with the planner's message and code", async (t) => {
  const r = await offline('--ppn', '2', '-c', '57');
  t.equal(r.code, 65);
  t.equal(r.stdout, '');
  t.equal(
    r.stderr,
    "rankd: node node1: -c 57 asks for more compute cores than local rank 0's share has 56 allowed cores; nearest feasible spec: -c 56 (RANKD_PLAN_TOO_MANY_CPUS)\n" +
      // the same command with the changed flag in place, ready to paste
      `rankd: try: rankd plan --facts-dir ${factsDir} --address node1=10.1.0.1 --address node2=10.1.0.2 --ppn 2 -c 56\n`,
  );
});

t.test('bad flags are usage errors (64) that say what is wrong', async (t) => {
  // one process per kind of mistake; the flag parsing itself is tested in-process
  const cases: [string[], RegExp][] = [
    [['--format', 'xml'], /^rankd: --format: "xml" is not one of table, matrix/],
    [['--address', 'node9=10.0.0.9'], /--address names node9, which has no node9\.json/],
  ];
  for (const [args, message] of cases) {
    const r = await offline(...args);
    t.equal(r.code, 64, args.join(' '));
    t.match(r.stderr, message);
  }
  const noAddress = await runCli(['plan', '--address', 'a=1.2.3.4'], {
    RANKD_URL: 'https://127.0.0.1:9',
    RANKD_TOKEN: 'x',
  });
  t.equal(noAddress.code, 64);
  t.match(noAddress.stderr, /--address only applies with --facts-dir/);
});

t.test('a facts file that is not facts names the file', async (t) => {
  const bad = join(dir, 'bad');
  mkdirSync(bad);
  writeFileSync(join(bad, 'x.json'), JSON.stringify({ schemaVersion: 1 }));
  const r = await runCli(['plan', '--facts-dir', bad]);
  t.equal(r.code, 64);
  t.match(r.stderr, /x\.json is not facts as `rankd facts --json` writes them/);
});

t.test("online: the controller plans over its agents' facts", async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const env = { ...controller.clientEnv };
  const empty = await runCli(['plan'], env);
  t.equal(empty.code, 65);
  t.match(empty.stderr, /no ready node to plan on.*RANKD_PLAN_NO_NODES/);

  const agents = roots.map((root, i) => startAgent(controller, { name: `node${i + 1}`, root }));
  t.teardown(() => Promise.all(agents.map((a) => a.stop())));
  await Promise.all(['node1', 'node2'].map((n) => waitForNode(controller, n, 'ready')));
  const r = await runCli(['plan', ...seedFlags, '--format', 'json'], env);
  t.equal(r.code, 0, r.stderr);
  const map = JSON.parse(r.stdout) as RankMap;
  t.same(
    map.ranks.map((x) => [x.node, x.cpus.length, x.commCpus]),
    [
      ['node1', 48, cpus('164-167')],
      ['node1', 48, cpus('220-223')],
      ['node2', 48, cpus('164-167')],
      ['node2', 48, cpus('220-223')],
    ],
  );
  const tooMany = await runCli(['plan', '--ppn', '2', '-c', '57'], env);
  t.equal(tooMany.code, 65);
  t.match(tooMany.stderr, /node node1: -c 57 asks for more compute cores.*RANKD_PLAN_TOO_MANY_CPUS/);
});
