// Issue 25's warnings and smaller points, on a real controller and agent (this machine's 2
// cores) through the built CLI: warnings once per node in the run header and in `rankd job`;
// counted words ("1 rank"); a refused spec answered with a command to paste; /ui redirected;
// `rankd logs` in time order, with --timestamps; facts in the ibv_* formats equal to the real
// tools without devices; an audit table within 120 columns; one rank-map table per run.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import {
  CLI,
  agentStateDir,
  runCli,
  startController,
  waitForNode,
  waitUntil,
  type ControllerHandle,
} from '../helpers/daemons.js';
import { httpsFetch } from '../helpers/tls.js';
import { soloOn, type Solo } from '../queue/helpers.js';

const isRoot = process.getuid?.() === 0;
const MEMLOCK = 8 * 1024 * 1024;

/**
 * The agent with RLIMIT_MEMLOCK capped at 8 MiB and without CAP_SYS_RESOURCE, so that it cannot
 * raise it, whatever the machine allows: every rank then carries the memlock warning.
 */
function startCappedAgent(
  controller: ControllerHandle,
  name: string,
): { pid: number; stop: () => Promise<void>; output: () => string } {
  const spool = mkdtempSync(join(tmpdir(), 'rankd-spool-'));
  const args = [
    'agent',
    '--controller',
    controller.url,
    '--ca-hash',
    controller.caHash,
    '--state-dir',
    agentStateDir(controller, name),
    '--name',
    name,
    '--config',
    '/dev/null',
    '--allow-root',
    '--spool-dir',
    spool,
  ];
  // prlimit and setpriv exec what they run: the PID is the agent's
  const child = spawn(
    'prlimit',
    [
      `--memlock=${MEMLOCK}:${MEMLOCK}`,
      'setpriv',
      '--bounding-set',
      '-sys_resource',
      '--',
      process.execPath,
      CLI,
      ...args,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, RANKD_RECONNECT_MAX_MS: '500', RANKD_JOIN_TOKEN: controller.joinToken },
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-100_000)));
  child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-100_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: child.pid!,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(kill);
      }
      rmSync(spool, { recursive: true, force: true });
    },
  };
}

async function jobIds(s: Solo): Promise<string[]> {
  return (await s.controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs')).body.jobs.map((j) => j.id);
}

/** The id `rankd run` printed in its header ("rankd: job ID"). */
function idIn(stderr: string): string {
  return /^rankd: job (\S+)$/m.exec(stderr)![1]!;
}

const RANK_MAP_HEADER = /^RANK\s+NODE\s+LOCAL\s+CPUS/gm;

t.test(
  'on a real controller and agent',
  { skip: isRoot ? false : 'the agent runs ranks as root and without CAP_SYS_RESOURCE (setpriv): root only, as in CI' },
  async (t) => {
    const controller = await startController();
    t.teardown(() => controller.stop());
    const agent = startCappedAgent(controller, 'n1');
    t.teardown(() => agent.stop());
    await waitForNode(controller, 'n1', 'ready');
    const s = soloOn(controller);

    t.test("a job's warnings: once per node in the run header and in rankd job, and per rank in JSON", async (t) => {
      const run = await s.cli(['run', '-n', '2', '--', 'true']);
      t.equal(run.code, 0, run.stderr);
      const warning = `n1 (ranks 0-1): RLIMIT_MEMLOCK stays ${MEMLOCK} (the agent lacks CAP_SYS_RESOURCE); RDMA memory registration may fail`;
      t.equal(
        run.stderr.split('\n').filter((l) => l.includes('RLIMIT_MEMLOCK')).length,
        1,
        'one line for the node, not one per rank',
      );
      t.match(run.stderr, `\nrankd: warning: ${warning}\n`, 'under the header, naming the node and its ranks');
      t.ok(run.stderr.indexOf('rankd: warning:') > run.stderr.search(RANK_MAP_HEADER), 'after the rank map');

      const id = idIn(run.stderr);
      const job = await s.cli(['job', id]);
      t.equal(job.code, 0, job.stderr);
      t.equal(
        job.stdout.split('\n').filter((l) => l.includes('RLIMIT_MEMLOCK')).length,
        1,
        'rankd job: once for the node',
      );
      t.match(job.stdout, `\nwarning: ${warning}\n`);
      const json = JSON.parse((await s.cli(['job', id, '--json'])).stdout) as { ranks: Array<{ warnings: string[] }> };
      t.same(
        json.ranks.map((r) => r.warnings.filter((w) => w.startsWith('RLIMIT_MEMLOCK')).length),
        [1, 1],
        'the JSON keeps the warning on each rank',
      );

      const quiet = await s.cli(['run', '-q', '-n', '2', '--', 'true']);
      t.equal(quiet.code, 0, quiet.stderr);
      t.notMatch(quiet.stderr, /warning/, '-q hides the header, warnings included');
    });

    t.test('one rank-map table per run, whether the job starts at once or waits first', async (t) => {
      const now = await s.cli(['run', '-n', '1', '--', 'true']);
      t.equal(now.code, 0, now.stderr);
      t.equal(now.stderr.match(RANK_MAP_HEADER)?.length, 1, 'started at once: one table');

      const hog = await s.submit({ ntasks: 1, cpusPerRank: 2 }, ['sleep', '30']);
      await s.waitState(hog.body.id, ['running']);
      const waiting = s.cli(['run', '-n', '1', '--', 'true']);
      await waitUntil('the second job to be queued', 20_000, async () =>
        (await s.queue()).some((q) => q.state === 'queued'),
      );
      // while it waits, the queue counts in words that agree with their numbers
      const queue = await s.cli(['queue']);
      t.match(queue.stdout, /\b1 rank 1 node 2 cores\b/, 'rankd queue: "1 rank 1 node", not "1 ranks 1 nodes"');
      await s.controller.api(`/v1/jobs/${hog.body.id}/cancel`, { method: 'POST' });
      const queued = await waiting;
      t.equal(queued.code, 0, queued.stderr);
      t.match(queued.stderr, /queued: needs 1 node with 2 free cores; 0 have room now[\s\S]*started/);
      t.equal(queued.stderr.match(RANK_MAP_HEADER)?.length, 1, 'queued, then started: one table');
    });

    t.test('messages count in words that agree: a one-rank job says "1 rank"', async (t) => {
      const run = await s.cli(['run', '-n', '1', '--', 'true']);
      const id = idIn(run.stderr);
      const job = await s.cli(['job', id]);
      t.match(job.stdout, new RegExp(`^job ${id}  succeeded  rank 0 exited 0$`, 'm'), 'not "all 1 ranks exited 0"');
      const refused = await s.cli(['run', '-N', '2', '--', 'true']);
      t.match(refused.stderr, /-N 2 asks for more nodes than the 1 node that matches/);
      for (const text of [run.stderr, job.stdout, refused.stderr])
        t.notMatch(text, /\b1 (ranks|nodes|cores|cpus|CPUs|GPUs)\b/);
    });

    t.test("a refused spec is answered with the user's own command, changed, ready to paste", async (t) => {
      const before = await jobIds(s);
      const args = ['run', '-n', '3', '--label-format', '{rank}> ', '--', 'echo', "it's", 'a b'];
      const r = await s.cli(args);
      t.equal(r.code, 65);
      t.match(
        r.stderr,
        /3 ranks but only 2 allowed cores .*; nearest feasible spec: -n 2 \(RANKD_PLAN_TOO_MANY_RANKS\)\n/,
        'the -n that fits, not a --ranks-per-node nobody typed',
      );
      const tryLine = /^rankd: try: (.*)$/m.exec(r.stderr)?.[1];
      t.equal(tryLine, `rankd run -n 2 --label-format '{rank}> ' -- echo 'it'\\''s' 'a b'`);
      t.same(await jobIds(s), before, 'nothing was submitted');
      // pasted into a shell, it runs
      const pasted = spawnSync('sh', ['-c', `rankd() { "${process.execPath}" "${CLI}" "$@"; }\n${tryLine}`], {
        env: { ...process.env, ...s.env },
        encoding: 'utf8',
        timeout: 60_000,
      });
      t.equal(pasted.status, 0, pasted.stderr);
      t.same(pasted.stdout.split('\n').sort(), ['', "0> it's a b", "1> it's a b"]);

      const c = await s.cli(['run', '-q', '-n', '1', '--cpus-per-rank=3', '--', 'true']);
      t.equal(
        /^rankd: try: (.*)$/m.exec(c.stderr)?.[1],
        'rankd run -q -n 1 -c 2 -- true',
        'a --flag=value form is replaced where it stood',
      );
    });

    t.test('/ui redirects to /ui/ without a token, as / does', async (t) => {
      for (const [path, location] of [
        ['/ui', '/ui/'],
        ['/ui?x=1', '/ui/?x=1'],
      ] as const) {
        const res = await httpsFetch(controller.url + path, { ca: controller.ca, signal: AbortSignal.timeout(10_000) });
        await res.text();
        t.equal(res.status, 302, `${path}: a redirect, not 401`);
        t.equal(res.headers.get('location'), location);
      }
      const api = await controller.api('/v1/jobs', { token: null });
      t.equal(api.status, 401, 'the API still wants its token');
    });

    t.test("rankd logs: the ranks' lines in the order they were written, and --timestamps", async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'rankd-order-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      // the ranks take turns through files: rank 1 writes first, then rank 0, then 1, then 0
      const script = [
        'turn() { while [ ! -e "$D/$1" ]; do sleep 0.02; done; }',
        'say() { echo "$1"; sleep 0.2; touch "$D/$2"; }',
        'if [ "$RANK" = 1 ]; then say b1 t1; turn t2; say b2 t3; else turn t1; say a1 t2; turn t3; echo a2; fi',
      ].join('\n');
      const run = await s.cli(['run', '-q', '-n', '2', '--env', `D=${dir}`, '--', 'sh', '-c', script]);
      t.equal(run.code, 0, run.stderr);
      const id = (await jobIds(s))[0]!;
      const logs = await s.cli(['logs', id]);
      t.equal(logs.code, 0, logs.stderr);
      t.equal(logs.stdout, '1: b1\n0: a1\n1: b2\n0: a2\n', 'in time order, not rank by rank');

      const stamped = await s.cli(['logs', '--timestamps', id]);
      t.equal(stamped.code, 0, stamped.stderr);
      const lines = stamped.stdout.trimEnd().split('\n');
      t.same(
        lines.map((l) => l.slice(25)),
        ['1: b1', '0: a1', '1: b2', '0: a2'],
        'each line after its time',
      );
      const times = lines.map((l) => l.slice(0, 24));
      for (const time of times)
        t.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'RFC 3339, UTC, milliseconds');
      t.same([...times].sort(), times, 'in order of their times');
      const view = (await s.controller.api<{ startedAt: string; endedAt: string }>(`/v1/jobs/${id}`)).body;
      t.ok(
        Date.parse(times[0]!) >= Date.parse(view.startedAt) - 1000 &&
          Date.parse(times[3]!) <= Date.parse(view.endedAt) + 1000,
        "within the job's run",
      );
      const one = await s.cli(['logs', '-t', '--no-label', '--rank', '0', id]);
      t.same(
        one.stdout.trimEnd().split('\n'),
        [`${times[1]} a1`, `${times[3]} a2`],
        '--rank with --timestamps, unlabelled',
      );
    });

    t.test('the audit table fits 120 columns; --wide has it all', async (t) => {
      // a refusal with a long reason, a long route and a long resource
      await controller.api('/v1/jobs/no-such-job-with-a-rather-long-identifier/cancel', {
        method: 'POST',
        token: 'not-a-token',
      });
      await s.cli(['run', '-q', '-n', '1', '--env', 'SOME_RATHER_LONG_VARIABLE_NAME=1', '--', 'true']);
      const table = await s.cli(['audit']);
      t.equal(table.code, 0, table.stderr);
      const lines = table.stdout.trimEnd().split('\n');
      t.ok(lines.length > 5, 'entries to look at');
      t.same(
        lines.filter((l) => l.length > 120),
        [],
        'no line is wider than 120 columns',
      );
      t.match(table.stdout, /…/, 'long cells are cut with an ellipsis');
      t.match(lines[0]!, /^TIME\s+USER\s+SOURCE\s+REQUEST\s+RESOURCE\s+STATUS\s+DECISION$/);
      const wide = await s.cli(['audit', '--wide']);
      t.ok(
        wide.stdout.split('\n').some((l) => l.length > 120),
        '--wide: as wide as it takes',
      );
      t.match(wide.stdout, /SOME_RATHER_LONG_VARIABLE_NAME/, '--wide: the environment names');
      t.match(
        wide.stdout,
        /deny: RANKD_UNAUTHORIZED: missing, wrong or revoked API token \(Authorization: Bearer <token>\)/,
        '--wide: whole reasons',
      );
    });
  },
);

const real = (tool: string, env: NodeJS.ProcessEnv = {}) =>
  spawnSync(tool, [], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 10_000 });
const noTools = real('ibv_devinfo').error ? 'ibv_devinfo is not installed (apt-get install ibverbs-utils)' : false;
// scripts/test-deps.sh installs ibverbs-utils in CI: there a missing tool is a failure, not a skip
if (noTools && process.env['CI'] === 'true') throw new Error(`${noTools}: CI must compare with the real tools`);

t.test(
  'facts in the ibv_* formats say what the real tools say where there is no device',
  { skip: noTools },
  async (t) => {
    const rankd = async (format: string, root?: string) =>
      runCli(['facts', '--format', format, ...(root ? ['--root', root] : [])]);

    // this machine, without RDMA devices (on these hosts the kernel has no verbs either)
    const devices = existsSync('/sys/class/infiniband') ? readdirSync('/sys/class/infiniband').length : 0;
    if (devices > 0)
      t.comment(
        'this machine has RDMA devices: ibv_devinfo prints verbs queries rankd does not read, so only the tree below is compared',
      );
    else {
      for (const tool of ['ibv_devinfo', 'ibv_devices']) {
        const want = real(tool);
        const got = await rankd(tool);
        t.same(
          { code: got.code, stdout: got.stdout, stderr: got.stderr },
          { code: want.status, stdout: want.stdout, stderr: want.stderr },
          `${tool} on this machine`,
        );
      }
    }

    // kernel verbs, no device: libibverbs reads sysfs where SYSFS_PATH says, rankd under --root
    const root = mkdtempSync(join(tmpdir(), 'rankd-noib-'));
    t.teardown(() => rmSync(root, { recursive: true, force: true }));
    mkdirSync(join(root, 'sys/class/infiniband_verbs'), { recursive: true });
    mkdirSync(join(root, 'sys/class/infiniband'), { recursive: true });
    writeFileSync(join(root, 'sys/class/infiniband_verbs/abi_version'), '6\n');
    for (const tool of ['ibv_devinfo', 'ibv_devices']) {
      const want = real(tool, { SYSFS_PATH: join(root, 'sys') });
      const got = await rankd(tool, root);
      t.same(
        { code: got.code, stdout: got.stdout, stderr: got.stderr },
        { code: want.status, stdout: want.stdout, stderr: want.stderr },
        `${tool} with kernel verbs and no device`,
      );
    }
    const noDevice = await rankd('ibv_devinfo', root);
    t.equal(noDevice.stderr, 'No IB devices found\n');
    t.equal(noDevice.code, 255);
  },
);
