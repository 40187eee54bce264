// The edges of `rankd up --slurm|--pods`, `rankd down`, `rankd agent --ephemeral` and
// `rankd controller --ephemeral`, on the built CLI: each refusal exits with its code, names
// the problem, and leaves nothing behind (no directory, nothing removed).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { CLI } from '../helpers/daemons.js';

const USAGE = 64;

/** The environment of this test without anything that would put the CLI inside an allocation or a pod. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^(SLURM_|SLURMD_|MASTER_ADDR$|RANK$|WORLD_SIZE$|RANKD_)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

/** Runs the built CLI to its end with `stdin` as its standard input; bounded in time. */
function rankd(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; stdin?: string; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: opts.env ?? cleanEnv(),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.on('error', () => {}); // a CLI that refused before reading its input
    child.stdin.end(opts.stdin ?? '');
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`rankd ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, opts.timeoutMs ?? 30_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function scratch(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-up-flags-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const SECRET = 'x'.repeat(40);

t.test('rankd up --slurm outside an allocation: 64, naming salloc and sbatch, and no directory', async (t) => {
  const tmp = scratch(t);
  const r = await rankd(['up', '--slurm'], { env: cleanEnv({ TMPDIR: tmp }) });
  t.equal(r.code, USAGE);
  t.match(r.stderr, /salloc/);
  t.match(r.stderr, /sbatch/);
  t.match(r.stderr, /RANKD_NOT_IN_ALLOCATION/);
  t.equal(r.stdout, '', 'no export line');
  const noList = await rankd(['up', '--slurm'], { env: cleanEnv({ SLURM_JOB_ID: '4242' }) });
  t.equal(noList.code, USAGE);
  t.match(noList.stderr, /SLURM_JOB_NODELIST is not set/);
  t.notOk(fs.existsSync('/tmp/rankd-4242'), 'no per-job directory made');
});

t.test('rankd up flag combinations that cannot be: 64 each, before anything starts', async (t) => {
  const tmp = scratch(t);
  const work = path.join(tmp, 'w');
  const pods = { MASTER_ADDR: '127.0.0.1', RANK: '0', WORLD_SIZE: '1', RANKD_JOIN_SECRET: SECRET };
  const cases: Array<{ args: string[]; env?: Record<string, string>; message: RegExp }> = [
    { args: ['up', '--slurm', '--pods', '--work-dir', work], message: /--slurm and --pods are two kinds of instance/ },
    {
      args: ['up', '--pods', '--detach', '--work-dir', work, '--', 'true'],
      env: pods,
      message: /--detach leaves the instance running; a command after it ends the instance/,
    },
    {
      args: ['up', '--slurm', '--detach', '--work-dir', work, '--', 'true'],
      env: { SLURM_JOB_ID: '1', SLURM_JOB_NODELIST: 'n1' },
      message: /--detach/,
    },
    { args: ['up', '--keep'], message: /--keep goes with --slurm or --pods/ },
    { args: ['up', '--work-dir', work], message: /--work-dir goes with --slurm or --pods/ },
    { args: ['up', '--pods', '--demo', '--work-dir', work], env: pods, message: /--demo runs on this machine alone/ },
  ];
  for (const c of cases) {
    const r = await rankd(c.args, { env: cleanEnv({ TMPDIR: tmp, ...c.env }) });
    t.equal(r.code, USAGE, c.args.join(' '));
    t.match(r.stderr, c.message, c.args.join(' '));
  }
  t.notOk(fs.existsSync(work), 'no work directory made');
});

t.test('rankd down with no instance: 64, naming RANKD_HOME', async (t) => {
  const home = scratch(t);
  fs.writeFileSync(path.join(home, 'keep-me'), '');
  const r = await rankd(['down'], { env: cleanEnv({ RANKD_HOME: home }) });
  t.equal(r.code, USAGE);
  t.match(r.stderr, /holds no instance/);
  t.match(r.stderr, /RANKD_HOME/);
  t.ok(fs.existsSync(path.join(home, 'keep-me')), 'the directory is left as it was');
});

t.test('rankd agent and rankd controller: flags that go with --ephemeral, and secrets that go alone', async (t) => {
  const tmp = scratch(t);
  const work = path.join(tmp, 'w');
  const agent = await rankd(['agent', '--work-dir', work, '--controller', 'https://127.0.0.1:1']);
  t.equal(agent.code, USAGE);
  t.match(agent.stderr, /--work-dir and --orphan-timeout go with --ephemeral/);
  const orphan = await rankd(['agent', '--orphan-timeout', '5s', '--controller', 'https://127.0.0.1:1']);
  t.equal(orphan.code, USAGE);

  const tokenFile = path.join(tmp, 'token');
  fs.writeFileSync(tokenFile, 'abcdef.0123456789abcdef', { mode: 0o600 });
  const agentArgs = ['agent', '--ephemeral', '--work-dir', work, '--controller', 'https://127.0.0.1:1'];
  for (const [flag, value] of [
    ['--join-token-file', tokenFile],
    ['--join-token', 'abcdef.0123456789abcdef'],
  ] as const) {
    const both = await rankd([...agentArgs, '--join-secret-file', '-', flag, value], { stdin: SECRET });
    t.equal(both.code, USAGE, flag);
    t.match(both.stderr, /--join-secret-file derives the join token: not with --join-token or --join-token-file/);
  }
  const controller = await rankd(['controller', '--ephemeral', '--listen', '127.0.0.1:0']);
  t.equal(controller.code, USAGE);
  t.match(controller.stderr, /--ephemeral needs --work-dir DIR/);
  const keep = await rankd(['controller', '--keep', '--listen', '127.0.0.1:0', '--data-dir', path.join(tmp, 'd')]);
  t.equal(keep.code, USAGE);
  t.match(keep.stderr, /--work-dir and --keep go with --ephemeral/);

  const secretFile = path.join(tmp, 'secret');
  fs.writeFileSync(secretFile, SECRET, { mode: 0o600 });
  const both = await rankd([
    'controller',
    ...['--listen', '127.0.0.1:0', '--data-dir', path.join(tmp, 'd')],
    ...['--join-secret-file', secretFile, '--tls-cert', '/dev/null', '--tls-key', '/dev/null'],
  ]);
  t.equal(both.code, USAGE);
  t.match(both.stderr, /--join-secret-file derives the controller's CA, which --tls-cert would not be served under/);

  // the data directory an ephemeral controller would remove when it stops is never one the user named
  const precious = path.join(tmp, 'precious');
  fs.mkdirSync(precious);
  fs.writeFileSync(path.join(precious, 'controller.db'), 'mine');
  const dataDir = await rankd([
    'controller',
    ...['--ephemeral', '--work-dir', work, '--data-dir', precious, '--listen', '127.0.0.1:0'],
  ]);
  t.equal(dataDir.code, USAGE);
  t.match(dataDir.stderr, /not with --data-dir/);
  t.equal(fs.readFileSync(path.join(precious, 'controller.db'), 'utf8'), 'mine');
  t.notOk(fs.existsSync(work), 'no work directory made');
  t.notOk(fs.existsSync(path.join(tmp, 'd')), 'no data directory made');
});

t.test('a bad join secret on standard input: 64 with RANKD_JOIN_SECRET_INVALID, no directory left', async (t) => {
  const tmp = scratch(t);
  const work = path.join(tmp, 'w');
  for (const [what, stdin, why] of [
    ['too short', 'short-secret\n', /at least 32 characters \(this one has 12\)/],
    ['with a space', 'a'.repeat(20) + ' ' + 'b'.repeat(20), /printable ASCII without spaces/],
    ['empty', '', /it is empty/],
  ] as const) {
    const agent = await rankd(
      ['agent', '--ephemeral', '--work-dir', work, '--controller', 'https://127.0.0.1:1', '--join-secret-file', '-'],
      { stdin },
    );
    t.equal(agent.code, USAGE, `agent, ${what}`);
    t.match(agent.stderr, /RANKD_JOIN_SECRET_INVALID/, `agent, ${what}`);
    t.match(agent.stderr, why, `agent, ${what}`);
    if (stdin.trim()) t.notMatch(agent.stderr, stdin.trim(), 'the secret is not echoed');
    const controller = await rankd(
      ['controller', '--ephemeral', '--work-dir', work, '--listen', '127.0.0.1:0', '--join-secret-file', '-'],
      { stdin },
    );
    t.equal(controller.code, USAGE, `controller, ${what}`);
    t.match(controller.stderr, /RANKD_JOIN_SECRET_INVALID/, `controller, ${what}`);
    t.notOk(fs.existsSync(work), `${what}: no work directory left`);
  }
  const pods = await rankd(['up', '--pods', '--work-dir', work, '--', 'true'], {
    env: cleanEnv({ MASTER_ADDR: '127.0.0.1', RANK: '0', WORLD_SIZE: '1', RANKD_JOIN_SECRET: 'short' }),
  });
  t.equal(pods.code, USAGE);
  t.match(pods.stderr, /RANKD_JOIN_SECRET: a join secret has at least 32 characters.*RANKD_JOIN_SECRET_INVALID/);
  t.notOk(fs.existsSync(work), 'up --pods: no work directory left');
});

t.test('an ephemeral agent name that would name a directory outside the work dir is refused first', async (t) => {
  const tmp = scratch(t);
  const work = path.join(tmp, 'w');
  const victim = path.join(tmp, 'victim');
  fs.mkdirSync(victim);
  fs.writeFileSync(path.join(victim, 'data'), 'keep');
  // agent-x/../../victim is tmp/victim: its subdirectory would be emptied as a stale one
  for (const [how, args, env] of [
    ['--name', ['--name', 'x/../../victim'], {}],
    ['SLURMD_NODENAME', [], { SLURMD_NODENAME: 'x/../../victim' }],
  ] as const) {
    const r = await rankd(
      ['agent', '--ephemeral', '--work-dir', work, '--controller', 'https://127.0.0.1:1', ...args],
      { env: cleanEnv(env) },
    );
    t.equal(r.code, USAGE, how);
    t.match(r.stderr, /a node name cannot contain "\/"/, how);
    t.equal(fs.readFileSync(path.join(victim, 'data'), 'utf8'), 'keep', `${how}: the other directory is untouched`);
    t.notOk(fs.existsSync(work), `${how}: no work directory made`);
  }
});

t.test('a work directory others can write to is refused by every daemon and by up, untouched', async (t) => {
  const tmp = scratch(t);
  const open = path.join(tmp, 'open');
  fs.mkdirSync(open);
  fs.chmodSync(open, 0o777);
  // what someone else could have left in a guessable /tmp/rankd-JOBID: an instance that is theirs
  fs.writeFileSync(
    path.join(open, 'instance.json'),
    '{"kind":"pods","nodes":[],"ready":[],"url":"https://127.0.0.1:1"}',
  );
  const before = fs.readdirSync(open).sort();
  const agent = await rankd(['agent', '--ephemeral', '--work-dir', open, '--controller', 'https://127.0.0.1:1']);
  t.equal(agent.code, USAGE);
  t.match(agent.stderr, /can be written by others \(mode 777\).*RANKD_WORK_DIR_UNSAFE/);
  const controller = await rankd(['controller', '--ephemeral', '--work-dir', open, '--listen', '127.0.0.1:0']);
  t.equal(controller.code, USAGE);
  t.match(controller.stderr, /RANKD_WORK_DIR_UNSAFE/);
  const up = await rankd(['up', '--pods', '--work-dir', open, '--', 'true'], {
    env: cleanEnv({ MASTER_ADDR: '127.0.0.1', RANK: '0', WORLD_SIZE: '1', RANKD_JOIN_SECRET: SECRET }),
  });
  t.equal(up.code, USAGE);
  t.match(up.stderr, /RANKD_WORK_DIR_UNSAFE/);
  t.same(fs.readdirSync(open).sort(), before, 'nothing written into it, nothing removed');
});

t.test('an ephemeral controller starts on what a killed one of another secret left in controller/', async (t) => {
  const work = path.join(scratch(t), 'w');
  const start = (secret: string) => {
    const child = spawn(
      process.execPath,
      [CLI, 'controller', '--ephemeral', '--work-dir', work, '--listen', '127.0.0.1:0', '--join-secret-file', '-'],
      { stdio: ['pipe', 'pipe', 'pipe'], env: cleanEnv() },
    );
    child.stdin.end(secret + '\n');
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    return { child, exited, output: () => out };
  };
  const listening = async (c: ReturnType<typeof start>) => {
    const deadline = Date.now() + 60_000;
    while (!/controller listening/.test(c.output()) && c.child.exitCode === null && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    return /controller listening/.test(c.output());
  };
  const first = start('a'.repeat(40));
  t.ok(await listening(first), first.output());
  first.child.kill('SIGKILL'); // as scancel after its grace: it removes nothing
  await first.exited;
  t.ok(fs.existsSync(path.join(work, 'controller', 'ca.key')), 'its data stayed');
  const second = start('b'.repeat(40));
  t.ok(await listening(second), 'the next instance starts (it used to stop at RANKD_JOIN_SECRET_MISMATCH)');
  t.notMatch(second.output(), /RANKD_JOIN_SECRET_MISMATCH/);
  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0);
  t.notOk(fs.existsSync(work), 'and leaves nothing');
});

t.test("rankd down (pods) ends the recorded daemons of its instance, not a pid reused by another's", async (t) => {
  const root = scratch(t);
  const home = path.join(root, 'pods');
  fs.mkdirSync(home, { mode: 0o700 });
  fs.writeFileSync(path.join(home, '.rankd-instance'), '');
  // processes whose argv is a rankd daemon's: one of this instance, one of another instance
  const fake = (workDir: string) => {
    const child = spawn(
      process.execPath,
      ['-e', 'setTimeout(() => {}, 60_000)', '/opt/rankd/main.js', 'agent', '--ephemeral', '--work-dir', workDir],
      { stdio: 'ignore' },
    );
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    return child;
  };
  const ours = fake(home);
  const theirs = fake(path.join(root, 'another'));
  await new Promise((r) => setTimeout(r, 300)); // their argv is in /proc once they run
  const record = { kind: 'pods', nodes: [], ready: [], url: 'https://127.0.0.1:1', createdAt: '' };
  fs.writeFileSync(path.join(home, 'instance.json'), JSON.stringify({ ...record, pids: [ours.pid, theirs.pid] }));
  const oursExit = new Promise((r) => ours.once('exit', (_code, signal) => r(signal)));
  const r = await rankd(['down'], { env: cleanEnv({ RANKD_HOME: home }) });
  t.equal(r.code, 0, r.stderr);
  t.equal(await oursExit, 'SIGTERM', "this instance's daemon got SIGTERM");
  t.equal(theirs.exitCode, null, "another instance's daemon under a recorded pid is left alone");
  t.equal(theirs.signalCode, null);
  t.notOk(fs.existsSync(home), 'the instance directory is gone');
});
