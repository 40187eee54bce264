// `rankd up --pods` on pods simulated by namespace hosts: each pod is a `rankd up --pods`
// in a host's network namespace with MASTER_ADDR (host1's address), RANK, WORLD_SIZE and
// the shared join secret, as a PyTorchJob or RunAI's submit-dist starts them. Pod 0 runs
// the controller and an agent, the others an agent each; nothing else starts a daemon here.
//
// The workers start first, as Kubernetes gives no order: they must wait for pod 0. After
// pod 0 ends, their agents stop once its controller has been gone for the orphan timeout
// (20 s), and nothing of rankd is left on any host: no process, no work directory.
import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processAlive } from '../helpers/cluster.js';
import { runCli } from '../helpers/daemons.js';
import { netnsPids, which } from './harness/commands.js';
import { createNetwork, type Namespace, type Network } from './harness/network.js';
import { spawnInNetns, type Exit, type NsProcess } from './harness/ns-process.js';
import { podRig, processesUnder, startPod, watchProcesses, type Pod, type PodRig } from './harness/pods.js';
import { clusterTest } from './harness/requirements.js';
import { waitFor } from './harness/wait.js';

/** The workers' orphan timeout (up/pods-instance.ts), and what a worker may take beyond it to stop. */
const ORPHAN_TIMEOUT_MS = 20_000;
const STOP_SLACK_MS = 10_000;

/** What each rank prints: the address of the host it runs on, and the CPUs it may run on. */
function rankScript(): string {
  const ip = which('ip') ?? 'ip';
  return `echo "$(${ip} -4 -o addr show dev eth0 | awk '{print $4}') $(grep Cpus_allowed_list /proc/self/status)"`;
}

interface RankLine {
  rank: number;
  node: string;
  address: string;
  cpus: string;
}

/** `rankd run --label-format '{rank} {node}: '` lines of rankScript. */
function rankLines(output: string): RankLine[] {
  const re = /^(\d+) (\S+): (\d+\.\d+\.\d+\.\d+)\/\d+ Cpus_allowed_list:\s+(\S+)$/gm;
  return [...output.matchAll(re)].map((m) => ({ rank: Number(m[1]), node: m[2]!, address: m[3]!, cpus: m[4]! }));
}

async function exitWithin(pod: Pod | NsProcess, ms: number): Promise<Exit> {
  const [name, proc] = 'process' in pod ? [pod.name, pod.process] : [pod.argv.join(' '), pod];
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} did not exit within ${ms} ms:\n${proc.output()}`)), ms);
  });
  try {
    return await Promise.race([proc.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Pod 0 of a set of `worldSize`, on the first host, its secret by file. */
function startPod0(rig: PodRig, net: Network, worldSize: number, extra: Partial<Pod['spec']> = {}): Pod {
  const master = net.hosts[0]!;
  return startPod(rig, { host: master, rank: 0, worldSize, masterAddr: master.address, secretBy: 'file', ...extra });
}

/** The workers (RANK 1…) of a pod set, started before pod 0, by file, file and environment. */
function startWorkers(rig: PodRig, net: Network, worldSize: number, extra: Partial<Pod['spec']> = {}): Pod[] {
  return net.hosts.slice(1, worldSize).map((host, i) =>
    startPod(rig, {
      host,
      rank: i + 1,
      worldSize,
      masterAddr: net.hosts[0]!.address,
      secretBy: i + 1 === 2 ? 'env' : 'file',
      ...extra,
    }),
  );
}

/** The workers, then pod 0 with --detach; settles when pod 0's `up` exits. `home` is a shell of pod 0's environment. */
async function detachedPodSet(rig: PodRig, net: Network) {
  const workers = startWorkers(rig, net, 3);
  const pod0 = startPod0(rig, net, 3, { flags: ['--detach'] });
  const end = await exitWithin(pod0, 120_000);
  const home = { RANKD_HOME: pod0.workDir, PATH: `${rig.binDir}:${process.env['PATH'] ?? ''}` };
  return { workers, pod0, end, home };
}

/** `rankd CMD…` in pod 0 with `home`, to its end; `run -N 3` runs rankScript() on 3 pods. */
async function inPod0(net: Network, home: NodeJS.ProcessEnv, argv: string[], ms: number) {
  const cmd = spawnInNetns(net.hosts[0]!.netns, ['rankd', ...argv], { env: home });
  return { exit: await exitWithin(cmd, ms), cmd };
}

const RUN_ONE_PER_POD = ['run', '-N', '3', '--label-format', '{rank} {node}: ', '--', 'sh', '-c', rankScript()];

/** Each rank's [rank, node, address], by rank. */
function placed(stdout: string): Array<[number, string, string]> {
  return rankLines(stdout)
    .sort((a, b) => a.rank - b.rank)
    .map((l) => [l.rank, l.node, l.address]);
}

/** Nothing of the pods is left: no process by pid or by command line, none in the hosts, no work dir. */
async function assertNothingLeft(t: Test, rig: PodRig, pods: Pod[], pids: Iterable<number>, hosts: Namespace[]) {
  await waitFor('every rankd process of the pods to end', 10_000, () => processesUnder(rig.dir).length === 0).catch(
    () => undefined,
  );
  t.same(processesUnder(rig.dir), [], 'no process names a work dir of the pods');
  const alive = [...pids].filter(processAlive);
  t.same(alive, [], 'every rankd process seen while the pods ran has ended');
  for (const h of hosts) t.same(netnsPids(h.netns), [], `nothing runs in ${h.name}`);
  for (const p of pods) t.notOk(existsSync(p.workDir), `${p.name}'s work dir ${p.workDir} is gone`);
}

clusterTest(t, 'rankd up --pods on 3 namespace hosts', { timeout: 600_000 }, async (t) => {
  const net = createNetwork(4);
  t.teardown(() => net.teardown());
  const rig = podRig(t);
  const master = net.hosts[0]!;

  await t.test('workers first, then pod 0 with a job across the three pods', async (t) => {
    const watch = watchProcesses(rig.dir);
    t.teardown(() => watch.stop());
    const workers = startWorkers(rig, net, 3);
    // the workers wait for pod 0: no agent yet, still running
    await new Promise((r) => setTimeout(r, 2000));
    for (const w of workers) {
      t.ok(w.process.running(), `${w.name} waits for pod 0`);
      t.notOk(existsSync(join(w.workDir, `agent-${w.name}`)), `${w.name} has started no agent yet`);
    }
    const nodesFile = join(rig.dir, 'nodes.json');
    const pod0 = startPod0(rig, net, 3, {
      command: [...['sh', '-c', 'rankd nodes --json >"$0" && exec "$@"', nodesFile], ...['rankd', ...RUN_ONE_PER_POD]],
    });
    const end = await exitWithin(pod0, 120_000);
    const pod0Ended = Date.now();
    t.equal(end.code, 0, `pod 0 exits with its command's code:\n${pod0.process.output()}`);

    const nodes = (JSON.parse(readFileSync(nodesFile, 'utf8')) as { nodes: Array<Record<string, unknown>> }).nodes;
    t.same(
      nodes.map((n) => [n['name'], n['state'], n['connected'], (n['labels'] as Record<string, string>)['pod-rank']]),
      [
        ['pod0', 'ready', true, '0'],
        ['pod1', 'ready', true, '1'],
        ['pod2', 'ready', true, '2'],
      ],
      "the controller's nodes: the three pods' agents, labelled with their RANK",
    );
    const lines = rankLines(pod0.process.stdout()).sort((a, b) => a.rank - b.rank);
    t.same(
      lines.map((l) => [l.rank, l.node, l.address]),
      [0, 1, 2].map((r) => [r, `pod${r}`, net.hosts[r]!.address]),
      'one rank per pod, each in its own pod (host address)',
    );
    for (const l of lines) t.match(l.cpus, /^\d+(-\d+)?(,\d+(-\d+)?)*$/, `rank ${l.rank} is bound to ${l.cpus}`);

    // distinct command lines: a process forked by a daemon has its command line until it execs
    const started = [...new Set(watch.seen.values())];
    t.equal(started.filter((c) => / controller /.test(c)).length, 1, 'one controller was started');
    t.equal(started.filter((c) => / agent --ephemeral /.test(c)).length, 3, 'three agents were started');

    for (const w of workers) {
      const exit = await exitWithin(w, ORPHAN_TIMEOUT_MS + STOP_SLACK_MS + 5000);
      t.equal(exit.code, 0, `${w.name} exits 0 once pod 0 is gone:\n${w.process.output()}`);
      t.ok(
        Date.now() - pod0Ended < ORPHAN_TIMEOUT_MS + STOP_SLACK_MS,
        `${w.name} stopped within the orphan timeout, 20 s, and its shutdown (${(Date.now() - pod0Ended) / 1000} s)`,
      );
    }
    watch.stop();
    await assertNothingLeft(t, rig, [pod0, ...workers], watch.seen.keys(), net.hosts);
  });

  await t.test('a worker pod killed and started again rejoins under its name, and a job runs on it', async (t) => {
    // Kubernetes restarts a pod's container: every process of it SIGKILLed, its emptyDir kept
    const watch = watchProcesses(rig.dir);
    t.teardown(() => watch.stop());
    const { workers, pod0, end, home } = await detachedPodSet(rig, net);
    t.equal(end.code, 0, `pod 0 is up:\n${pod0.process.output()}`);
    const victim = workers[1]!;
    for (const pid of netnsPids(victim.spec.host.netns)) process.kill(pid, 'SIGKILL');
    await exitWithin(victim, 10_000);
    const restarted = startPod(rig, victim.spec);
    // its old link is gone at once (SIGKILL closes the socket); ready and connected is the new agent
    let seen = '';
    await waitFor(
      `${victim.name} ready again under its name`,
      60_000,
      async () => {
        const list = await inPod0(net, home, ['nodes', '--json'], 20_000);
        if (list.exit.code !== 0) return false;
        seen = list.cmd.stdout();
        const node = (
          JSON.parse(seen) as { nodes: Array<{ name: string; state: string; connected: boolean }> }
        ).nodes.find((n) => n.name === victim.name);
        return node?.state === 'ready' && node.connected;
      },
      500,
    ).catch((err: Error) => t.fail(`${err.message}: ${seen}\n${restarted.process.output()}`));
    const run = await inPod0(net, home, RUN_ONE_PER_POD, 120_000);
    t.equal(run.exit.code, 0, `a job across the three pods:\n${run.cmd.output()}`);
    t.same(
      placed(run.cmd.stdout()),
      [0, 1, 2].map((r) => [r, `pod${r}`, net.hosts[r]!.address]),
      `one rank per pod, ${victim.name} among them`,
    );
    const down = await inPod0(net, home, ['down'], 60_000);
    t.equal(down.exit.code, 0, `rankd down:\n${down.cmd.output()}`);
    for (const w of [workers[0]!, restarted])
      t.equal((await exitWithin(w, ORPHAN_TIMEOUT_MS + STOP_SLACK_MS)).code, 0, `${w.name} exits 0 after rankd down`);
    watch.stop();
    await assertNothingLeft(t, rig, [pod0, workers[0]!, restarted], watch.seen.keys(), net.hosts);
  });

  await t.test("pod 0's exit code is its command's, also when the job fails", async (t) => {
    const watch = watchProcesses(rig.dir);
    t.teardown(() => watch.stop());
    const workers = startWorkers(rig, net, 3);
    const pod0 = startPod0(rig, net, 3, {
      command: ['rankd', 'run', '-N', '3', '--', 'sh', '-c', 'exit 3'],
    });
    const end = await exitWithin(pod0, 120_000);
    t.equal(end.code, 3, `rankd run's exit code 3 is pod 0's:\n${pod0.process.output()}`);
    for (const w of workers)
      t.equal((await exitWithin(w, ORPHAN_TIMEOUT_MS + STOP_SLACK_MS)).code, 0, `${w.name} exits 0`);
    watch.stop();
    await assertNothingLeft(t, rig, [pod0, ...workers], watch.seen.keys(), net.hosts);
  });

  await t.test('--detach on pod 0, then rankd run with its RANKD_HOME, then rankd down', async (t) => {
    const watch = watchProcesses(rig.dir);
    t.teardown(() => watch.stop());
    const { workers, pod0, end, home } = await detachedPodSet(rig, net);
    t.equal(end.code, 0, `pod 0's up --detach exits 0 once every pod is ready:\n${pod0.process.output()}`);
    t.equal(pod0.process.stdout(), `export RANKD_HOME=${pod0.workDir}\n`, 'its stdout is the one line to eval');
    const run = await inPod0(net, home, RUN_ONE_PER_POD, 120_000);
    t.equal(run.exit.code, 0, `rankd run against the detached instance:\n${run.cmd.output()}`);
    t.same(
      placed(run.cmd.stdout()),
      [0, 1, 2].map((r) => [r, `pod${r}`, net.hosts[r]!.address]),
      'one rank per pod',
    );
    for (const w of workers) t.ok(w.process.running(), `${w.name} still runs`);
    const down = await inPod0(net, home, ['down'], 60_000);
    t.equal(down.exit.code, 0, `rankd down:\n${down.cmd.output()}`);
    const downAt = Date.now();
    t.notOk(existsSync(pod0.workDir), "rankd down removed pod 0's instance directory");
    for (const w of workers) {
      t.equal((await exitWithin(w, ORPHAN_TIMEOUT_MS + STOP_SLACK_MS)).code, 0, `${w.name} exits 0 after rankd down`);
      t.ok(Date.now() - downAt < ORPHAN_TIMEOUT_MS + STOP_SLACK_MS, `${w.name} stopped within the orphan timeout`);
    }
    watch.stop();
    await assertNothingLeft(t, rig, [pod0, ...workers], watch.seen.keys(), net.hosts);
  });

  await t.test(
    'WORLD_SIZE=4 with a fourth pod holding the wrong secret: named, exit 69; --allow-partial goes on',
    async (t) => {
      const watch = watchProcesses(rig.dir);
      t.teardown(() => watch.stop());
      const startSet = () => [
        ...startWorkers(rig, net, 3, { worldSize: 4 }),
        startPod(rig, {
          host: net.hosts[3]!,
          rank: 3,
          worldSize: 4,
          masterAddr: master.address,
          secretBy: 'file',
          secretFile: rig.wrongSecretFile,
        }),
      ];
      const pod0Spec = { host: master, rank: 0, worldSize: 4, masterAddr: master.address, secretBy: 'file' as const };

      const first = startSet();
      const refused = startPod(rig, { ...pod0Spec, flags: ['--timeout', '20s'], command: ['true'] });
      const end = await exitWithin(refused, 120_000);
      t.equal(end.code, 69, `without --allow-partial, pod 0 exits 69:\n${refused.process.output()}`);
      t.match(
        refused.process.stderr(),
        /pod RANK=3: no agent ready within 20 s \(RANKD_NODES_NOT_READY\); --keep keeps the logs/,
      );
      t.notMatch(refused.process.stderr(), /pod RANK=[012]\b/, 'only the missing pod is named');
      const wrong = first[2]!;
      const wrongEnd = await exitWithin(wrong, 60_000);
      t.not(wrongEnd.code, 0, `the pod with the wrong secret fails: ${wrongEnd.code}`);
      t.match(wrong.process.output(), /RANKD_CA_HASH_MISMATCH/, "its agent refuses the controller's CA");
      for (const w of first.slice(0, 2))
        t.equal((await exitWithin(w, ORPHAN_TIMEOUT_MS + STOP_SLACK_MS)).code, 0, `${w.name} exits 0`);

      const second = startSet();
      const nodesFile = join(rig.dir, 'partial-nodes.json');
      const auditFile = join(rig.dir, 'partial-audit.json');
      const pod0 = startPod(rig, {
        ...pod0Spec,
        flags: ['--timeout', '20s', '--allow-partial'],
        command: [
          ...['sh', '-c', 'rankd nodes --json >"$0" && rankd audit --json >"$1" && shift && exec "$@"'],
          ...[nodesFile, auditFile, 'rankd', 'run', '-N', '3', '--label-format', '{rank} {node}: '],
          ...['--', 'sh', '-c', rankScript()],
        ],
      });
      t.equal(
        (await exitWithin(pod0, 120_000)).code,
        0,
        `with --allow-partial, pod 0 goes on:\n${pod0.process.output()}`,
      );
      t.match(pod0.process.stderr(), /going on without pod RANK=3 \(--allow-partial\)/);
      t.match(pod0.process.stderr(), /3 of 4 pods ready/);
      const nodes = (JSON.parse(readFileSync(nodesFile, 'utf8')) as { nodes: Array<{ name: string }> }).nodes;
      t.same(
        nodes.map((n) => n.name),
        ['pod0', 'pod1', 'pod2'],
        'the pod with the wrong secret is not a node',
      );
      const audit = (JSON.parse(readFileSync(auditFile, 'utf8')) as { entries: Array<Record<string, unknown>> })
        .entries;
      t.same(
        audit.filter((e) => String(e['source']).includes(net.hosts[3]!.address)),
        [],
        'it never presented a token: no request of its is in the audit log',
      );
      t.same(
        rankLines(pod0.process.stdout())
          .map((l) => l.node)
          .sort(),
        ['pod0', 'pod1', 'pod2'],
        'the job ran on the three pods that joined',
      );
      t.match(second[2]!.process.output(), /RANKD_CA_HASH_MISMATCH/, 'the wrong pod failed again');
      for (const w of second) await exitWithin(w, ORPHAN_TIMEOUT_MS + STOP_SLACK_MS);
      watch.stop();
      await assertNothingLeft(t, rig, [refused, pod0, ...first, ...second], watch.seen.keys(), net.hosts);
    },
  );
});

t.test('--pods without MASTER_ADDR: exit 64, naming it', async (t) => {
  const r = await runCli(['up', '--pods', '--name', 'pod0', '--work-dir', '/nonexistent/rankd-pods'], {
    MASTER_ADDR: '',
    RANK: '0',
    WORLD_SIZE: '1',
    RANKD_JOIN_SECRET: 'a'.repeat(32),
  });
  t.equal(r.code, 64, r.stderr);
  t.match(r.stderr, /MASTER_ADDR is not set/);
  t.notOk(existsSync('/nonexistent/rankd-pods'), 'no work dir was made');
});

t.test('a worker whose pod 0 never answers: exit 69 naming RANKD_UNREACHABLE, and nothing made', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-pods-worker-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const port = await closedPort();
  const workDir = join(dir, 'work');
  const r = await runCli(
    ['up', '--pods', '--name', 'pod1', '--work-dir', workDir, '--port', String(port), '--timeout', '2s'],
    { MASTER_ADDR: '127.0.0.1', RANK: '1', WORLD_SIZE: '2', RANKD_JOIN_SECRET: 'a'.repeat(32) },
  );
  t.equal(r.code, 69, r.stderr);
  t.match(r.stderr, `pod 0's controller at https://127.0.0.1:${port} did not answer within 2 s`);
  t.match(r.stderr, /\(RANKD_UNREACHABLE\)/);
  t.notMatch(r.stderr, /internal error|\n\s+at /, 'no stack');
  t.notOk(existsSync(workDir), 'no work dir was made');
});

/** A loopback port nothing listens on (it was free a moment ago). */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
