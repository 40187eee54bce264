// `rankd run` exports the submitter's environment (docs/ranks.md "The environment"): the
// size bound before any request and on the controller, the client's token kept out of
// every rank and of the controller's store, and rankd's own variables over the exported
// ones on every path a rank starts by (PMI-1, a terminal, Open MPI's orted).
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { localCluster } from '../helpers/cluster.js';
import { IDENTITY_VARIABLES, notExportedBecause } from '@rankd/protocol/export-env';
import { runCli } from '../helpers/daemons.js';
import { which } from '../../bench/lib/which.js';

const KiB = 1024;
/** The client's environment besides what points it at a controller: no variable of the test runner's own. */
const SHELL = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };

/** `env` over the test process's own variables, each of which it unsets. */
function only(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const cleared: Record<string, undefined> = {};
  for (const k of Object.keys(process.env)) cleared[k] = undefined;
  return { ...cleared, ...env };
}

/** runCli with exactly `env` as the client's environment (runCli adds the test process's own). */
function rankd(args: string[], env: Record<string, string | undefined>, timeoutMs = 60_000) {
  return runCli(args, only(env), timeoutMs);
}

/**
 * What a process started as `rankd` is, with exactly `env`, really holds: tap's process-info
 * hook adds its own variables (NODE_OPTIONS, _TAPJS_PROCESSINFO_*) to every child process,
 * and their size depends on the run (one CI run's came to some 10 KiB).
 */
function environmentSeenBy(env: Record<string, string>): Record<string, string> {
  const out = execFileSync(process.execPath, ['-e', 'process.stdout.write(JSON.stringify(process.env))'], {
    env: { ...process.env, ...only(env) },
  });
  return JSON.parse(out.toString('utf8')) as Record<string, string>;
}

/** A loopback listener that only counts connections: proof that nothing was sent. */
async function countingListener(t: Test): Promise<{ url: string; connections: () => number }> {
  let n = 0;
  const server = net.createServer((s) => {
    n++;
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}`, connections: () => n };
}

/** The rank's variables from `env`'s output (labels off; a terminal ends lines with \r\n). */
function parseEnv(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of stdout.split(/\r?\n/)) {
    const eq = line.indexOf('=');
    if (eq > 0) out.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return out;
}

t.test('an environment over the bound exits 64 before any request', async (t) => {
  const listener = await countingListener(t);
  const client = { ...SHELL, RANKD_URL: listener.url, RANKD_TOKEN: 'not-sent', RANKD_HOME: '/nonexistent' };
  const large = { A: 'a'.repeat(100 * KiB), B: 'b'.repeat(100 * KiB), C: 'c'.repeat(90 * KiB) };
  // The sum as execve counts it: the three variables and whatever else the CLI's process
  // holds and exports, which the test runner adds to (environmentSeenBy).
  const exportedBytes = (env: Record<string, string>) =>
    Object.entries(env)
      .filter(([k]) => !IDENTITY_VARIABLES.includes(k) && !notExportedBecause(k))
      .reduce((n, [k, v]) => n + Buffer.byteLength(`${k}=${v}`) + 1, 0);
  const rest = exportedBytes(environmentSeenBy(client));
  const expectedKiB = `${((exportedBytes(large) + rest) / KiB).toFixed(1).replace(/\.0$/, '').replace('.', '\\.')} KiB`;
  t.comment(`the client's environment besides A, B and C: ${rest} B`);
  const cases: Array<{ name: string; env: Record<string, string>; args: string[]; message: RegExp }> = [
    {
      name: 'exported variables over 256 KiB together',
      env: large,
      args: [],
      message: new RegExp(
        `the ranks' environment is ${expectedKiB} \\(exported ${expectedKiB}, --env 0 B\\), over rankd's limit of 256 KiB; ` +
          'the largest: A 100 KiB, B 100 KiB, C 90 KiB',
      ),
    },
    {
      name: '--env counts with the exported variables',
      env: { A: 'a'.repeat(100 * KiB), B: 'b'.repeat(100 * KiB) },
      args: ['--env', `E=${'e'.repeat(100 * KiB)}`],
      message: /over rankd's limit of 256 KiB/,
    },
  ];
  for (const c of cases) {
    const r = await rankd(['run', '-q', '-n', '1', ...c.args, '--', 'true'], { ...client, ...c.env });
    t.equal(r.code, 64, `${c.name}: exit 64`);
    t.match(r.stderr, c.message, `${c.name}: the message names the limit`);
    t.match(r.stderr, /\(RANKD_ENV_TOO_LARGE\)/, `${c.name}: and the code`);
    t.equal(listener.connections(), 0, `${c.name}: nothing was sent`);
  }
  // the same shell with nothing exported passes the check and goes on to the controller
  const r = await rankd(['run', '-q', '-n', '1', '--export', 'NONE', '--', 'true'], { ...client, ...cases[0]!.env });
  t.not(r.code, 64, `--export NONE leaves the large variables home: ${r.stderr}`);
  t.ok(listener.connections() > 0, 'and the request is made');

  const named = await rankd(['run', '-q', '-n', '1', '--export', 'FOO,RANKD_TOKEN', '--', 'true'], client);
  t.equal(named.code, 64, '--export naming RANKD_TOKEN: exit 64');
  t.match(
    named.stderr,
    /--export RANKD_TOKEN: rankd never passes it from your environment to ranks, because it is rankd's own client setting/,
  );
  t.equal(listener.connections(), 1, 'nothing more was sent');
});

t.test('the controller refuses what the CLI never sends, and creates nothing', async (t) => {
  const { controller } = await localCluster(t, ['envcheck']);
  const submit = (exportEnv: Record<string, string>) =>
    controller.api<{ code: string; message: string }>('/v1/jobs', {
      method: 'POST',
      body: { command: ['true'], placement: { ntasks: 1 }, exportEnv },
    });

  const token = await submit({ FOO: 'bar', RANKD_TOKEN: 'secret' });
  t.equal(token.status, 400);
  t.equal(token.body.code, 'RANKD_ENV_NOT_EXPORTABLE');
  t.match(token.body.message, /exported variable RANKD_TOKEN is never passed to ranks/);

  const big = await submit({ A: 'a'.repeat(100 * KiB), B: 'b'.repeat(100 * KiB), C: 'c'.repeat(100 * KiB) });
  t.equal(big.status, 400);
  t.equal(big.body.code, 'RANKD_ENV_TOO_LARGE');
  t.match(big.body.message, /over rankd's limit of 256 KiB/);

  const jobs = await controller.api<{ jobs: unknown[] }>('/v1/jobs');
  t.same(jobs.body.jobs, [], 'no job was created');
  const audit = await controller.api<{
    entries: Array<{ route: string; decision: string; status: number | null; reason: string }>;
  }>('/v1/audit');
  const refused = audit.body.entries.filter((e) => e.route === '/v1/jobs' && e.status === 400);
  t.equal(refused.length, 2, `both refusals are audited: ${JSON.stringify(refused)}`);
});

t.test("the client's token reaches no rank and is not stored with the job", async (t) => {
  const cluster = await localCluster(t, ['envtoken']);
  const token = cluster.env['RANKD_TOKEN']!;
  const dbBytes = () =>
    readdirSync(cluster.controller.dataDir)
      .filter((f) => f.startsWith('rankd.db'))
      .map((f) => readFileSync(join(cluster.controller.dataDir, f)).toString('latin1'))
      .join('');
  t.notOk(dbBytes().includes(token), 'the store holds no plain token to begin with (else this test proves nothing)');
  const r = await rankd(['run', '-q', '--no-label', '-n', '1', '--', 'env'], {
    ...SHELL,
    ...cluster.env,
    FOO: 'exported',
  });
  t.equal(r.code, 0, r.stderr);
  const env = parseEnv(r.stdout);
  t.equal(env.get('FOO'), 'exported', 'the shell environment is exported');
  t.notOk(r.stdout.includes(token), "the token is nowhere in the rank's environment");
  t.same(
    [...env.keys()].filter((k) => k.startsWith('RANKD_')).sort(),
    ['RANKD_ATTEMPT', 'RANKD_JOB_ID', 'RANKD_MAX_RESTARTS'],
    'nor RANKD_URL, RANKD_CA or RANKD_HOME: of RANKD_* only its job id and attempt',
  );
  t.notOk(dbBytes().includes(token), "nor in the controller's store");
});

t.test("every path a rank starts by gets the environment, with rankd's variables over it", async (t) => {
  const cluster = await localCluster(t, ['envpaths']);
  const root = execFileSync('getent', ['passwd', 'root'], { encoding: 'utf8' }).trim().split(':');
  const shell = {
    ...SHELL,
    ...cluster.env,
    FOO: 'bar',
    VIRTUAL_ENV: '/opt/venv',
    RANK: '7',
    WORLD_SIZE: '99',
    CUDA_VISIBLE_DEVICES: '5',
    OMPI_COMM_WORLD_RANK: '5',
    LD_LIBRARY_PATH: '/opt/x/lib',
    HOME: '/home/alice',
    USER: 'alice',
  };
  const paths: Array<{ name: string; args: string[]; skip?: string }> = [
    { name: 'pmi1 (the default)', args: [] },
    { name: '--pty', args: ['--pty'] },
    {
      name: '--mpi openmpi',
      args: ['--mpi', 'openmpi'],
      ...(which('mpirun.openmpi') && which('orted') ? {} : { skip: 'Open MPI is not installed (openmpi-bin)' }),
    },
  ];
  for (const p of paths) {
    await t.test(p.name, { skip: p.skip ?? false }, async (t) => {
      const r = await rankd(
        ['run', '-q', '--no-label', '-n', '1', '--gpu-bind', 'visible', ...p.args, '--', 'env'],
        shell,
      );
      t.equal(r.code, 0, r.stderr);
      const env = parseEnv(r.stdout);
      t.equal(env.get('FOO'), 'bar', 'an exported variable reaches the rank');
      t.equal(env.get('VIRTUAL_ENV'), '/opt/venv');
      t.equal(env.get('RANK'), '0', "rankd's RANK wins over the exported one");
      t.equal(env.get('WORLD_SIZE'), '1');
      t.equal(env.get('CUDA_VISIBLE_DEVICES'), '', "the binding's CUDA_VISIBLE_DEVICES wins (no GPU here)");
      if (p.args.includes('openmpi'))
        t.equal(env.get('OMPI_COMM_WORLD_RANK'), '0', "Open MPI's own variables win over the exported ones");
      t.same(
        [env.get('HOME'), env.get('USER'), env.get('LOGNAME'), env.get('SHELL')],
        [root[5], 'root', 'root', root[6]],
        "the rank's user's identity, from passwd, not the submitter's",
      );
      t.notOk(env.has('LD_LIBRARY_PATH'), 'a root rank gets no exported loader variable');
      const jobs = await rankd(['jobs', '--json'], cluster.env);
      const list = JSON.parse(jobs.stdout) as Array<{ id: string }> | { jobs: Array<{ id: string }> };
      const id = (Array.isArray(list) ? list : list.jobs)[0]!.id;
      const view = JSON.parse((await rankd(['job', id, '--json'], cluster.env)).stdout) as {
        ranks: Array<{ warnings: string[] }>;
      };
      const warned = view.ranks[0]!.warnings.filter((w) =>
        /the rank runs as root, so the exported LD_LIBRARY_PATH was left out: loader variables never reach a root rank/.test(
          w,
        ),
      );
      t.equal(warned.length, 1, `and the rank's warnings say so: ${JSON.stringify(view.ranks[0]!.warnings)}`);
    });
  }

  const given = await rankd(['run', '-q', '-n', '1', '--env', 'LD_LIBRARY_PATH=/opt/x/lib', '--', 'true'], {
    ...SHELL,
    ...cluster.env,
  });
  t.not(given.code, 0, 'a loader variable given with --env to a root rank is refused, as before');
  t.match(given.stderr, /RANKD_ROOT_LOADER_ENV|loader and libc variables are refused for root targets/);
});
