// How `rankd up` hears its controller (packages/cli/src/up/instance.ts, daemon-process.ts):
// only a whole JSON line of the right shape is a ready line, one of another CA is refused,
// what an earlier start left in the file is not this start's answer, and the log that
// explains a daemon's failure can still be shown after the daemon removed its directory.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { deriveJoinMaterial } from '#protocol/join-secret';
import { DaemonProcess } from '#cli/up/daemon-process';
import { readyLine } from '#cli/up/instance';
import { CLI, waitUntil } from '../helpers/daemons.js';

const SECRET = 'ready-line-test-secret-' + 'r'.repeat(20);
const OTHER = 'another-instance-secret-' + 's'.repeat(20);

function scratch(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-ready-line-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A self-signed CA whose key the secret derives, as the controller makes it. */
async function caOf(secret: string, dir: string): Promise<string> {
  const { loadOrCreateCa } = await import('#controller/tls/pki');
  const m = deriveJoinMaterial(secret);
  const caDir = fs.mkdtempSync(path.join(dir, 'ca-'));
  return (await loadOrCreateCa(caDir, { keyPem: m.caKeyPem, caHash: m.caHash })).certPem;
}

t.test('only a whole ready line of the right shape counts; another CA is refused', async (t) => {
  const dir = scratch(t);
  const { caHash } = deriveJoinMaterial(SECRET);
  const ready = { url: 'https://10.0.0.1:7480', caHash, ca: await caOf(SECRET, dir), apiToken: 'tok', pid: 42 };
  const out = path.join(dir, 'controller.out');
  t.equal(readyLine(out, caHash), undefined, 'no file yet');
  const line = JSON.stringify(ready);
  fs.writeFileSync(out, line.slice(0, 40));
  t.equal(readyLine(out, caHash), undefined, 'half a line is not one (it used to be parsed, and throw)');
  fs.writeFileSync(out, '{ a task prolog says hello\n{"url":1}\n' + line.slice(0, 40));
  t.equal(readyLine(out, caHash), undefined, 'lines that are not a ready line are passed over');
  fs.appendFileSync(out, line.slice(40) + '\n');
  t.same(readyLine(out, caHash), ready);

  const otherHash = deriveJoinMaterial(OTHER).caHash;
  fs.writeFileSync(out, JSON.stringify({ ...ready, caHash: otherHash, ca: await caOf(OTHER, dir) }) + '\n');
  t.throws(() => readyLine(out, caHash), /not the join secret's .*: not this instance's controller/);
  fs.writeFileSync(out, JSON.stringify({ ...ready, ca: await caOf(OTHER, dir) }) + '\n');
  t.throws(() => readyLine(out, caHash), /not this instance's controller/, 'a caHash that lies about its CA');
});

t.test("a daemon's stdout file is truncated: an earlier start's ready line is not this one's", async (t) => {
  const dir = scratch(t);
  const out = path.join(dir, 'controller.out');
  fs.writeFileSync(out, '{"url":"https://stale:1","caHash":"sha256:00","ca":"","apiToken":"x","pid":1}\n');
  const daemon = new DaemonProcess('version', ['--version'], path.join(dir, 'd.log'), {}, { outFile: out });
  await daemon.exited;
  t.notMatch(fs.readFileSync(out, 'utf8'), /stale/);
  t.match(fs.readFileSync(out, 'utf8'), /^\d+\.\d+/, 'only what this one printed');
});

t.test('the tail of a log the daemon removed (with its whole directory) can still be shown', async (t) => {
  const dir = scratch(t);
  const log = path.join(dir, 'gone', 'controller.log');
  fs.mkdirSync(path.dirname(log));
  const daemon = new DaemonProcess('controller', ['controller', '--admin', 'Not A Name'], log);
  await daemon.exited;
  fs.rmSync(path.dirname(log), { recursive: true });
  t.match(daemon.tail(), /--admin Not A Name: a user name is/);
});

t.test('rankd up --pods after a start that was killed: the stale controller.out does not stop it', async (t) => {
  const work = path.join(scratch(t), 'pods');
  fs.mkdirSync(work, { mode: 0o700 });
  fs.writeFileSync(path.join(work, '.rankd-instance'), '');
  const stale = { url: 'https://127.0.0.1:1', caHash: deriveJoinMaterial(OTHER).caHash, apiToken: 'x', pid: 1 };
  fs.writeFileSync(path.join(work, 'controller.out'), JSON.stringify({ ...stale, ca: await caOf(OTHER, work) }) + '\n');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, MASTER_ADDR: '127.0.0.1', RANK: '0', WORLD_SIZE: '1' };
  env['RANKD_JOIN_SECRET'] = SECRET;
  const up = spawn(
    process.execPath,
    [CLI, 'up', '--pods', '--port', String(port), '--name', 'pod0', '--work-dir', work, '--', 'true'],
    { stdio: ['ignore', 'pipe', 'pipe'], env },
  );
  let stderr = '';
  up.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => up.kill('SIGKILL'), 90_000);
  const code = await new Promise<number | null>((r) => up.once('exit', r));
  clearTimeout(timer);
  t.equal(code, 0, stderr);
  t.notOk(fs.existsSync(work), 'and it leaves nothing');
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    import('node:net').then(({ createServer }) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    }, reject);
  });
}

t.test('two rankd up --pods at once on one home: one instance, and the second attaches to it', async (t) => {
  const work = path.join(scratch(t), 'pods');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, MASTER_ADDR: '127.0.0.1', RANK: '0', WORLD_SIZE: '1' };
  env['RANKD_JOIN_SECRET'] = SECRET;
  const up = (command: string[]) => {
    const child = spawn(
      process.execPath,
      [CLI, 'up', '--pods', '--port', String(port), '--name', 'pod0', '--work-dir', work, '--', ...command],
      { stdio: ['ignore', 'pipe', 'pipe'], env },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const exited = new Promise<number | null>((r) =>
      child.once('exit', (code) => {
        clearTimeout(timer);
        r(code);
      }),
    );
    return { exited, stderr: () => stderr };
  };
  // the first holds the instance until the second has run its command in it
  const marker = path.join(path.dirname(work), 'second-ran');
  const first = up(['sh', '-c', `while [ ! -e ${marker} ]; do sleep 0.2; done`]);
  // the second comes while the first is starting (it holds the start lock, and no controller answers yet)
  await waitUntil('the first up to take the start lock', 30_000, () => fs.existsSync(path.join(work, 'starting.pid')));
  t.notOk(fs.existsSync(path.join(work, 'config.json')), 'the first one is still starting');
  const second = up(['touch', marker]);
  const [a, b] = await Promise.all([first.exited, second.exited]);
  t.equal(a, 0, first.stderr());
  t.equal(b, 0, second.stderr());
  t.match(second.stderr(), /another "rankd up" is starting the instance in .*: waiting/);
  t.match(second.stderr(), /already runs the instance's controller .*: using it/, 'then attached to it');
  t.equal((first.stderr().match(/pods: controller/g) ?? []).length, 1, 'one controller started, by the first');
  t.notMatch(second.stderr(), /pods: controller/, 'none by the second');
  t.notOk(fs.existsSync(work), 'and nothing is left');
});

t.test('SIGTERM to rankd up while it starts: its daemons are stopped and nothing is left', async (t) => {
  const work = path.join(scratch(t), 'pods');
  const port = await freePort();
  // pod 1 never comes: up waits for it, with its controller and pod 0's agent running
  const env: NodeJS.ProcessEnv = { ...process.env, MASTER_ADDR: '127.0.0.1', RANK: '0', WORLD_SIZE: '2' };
  env['RANKD_JOIN_SECRET'] = SECRET;
  const up = spawn(
    process.execPath,
    [CLI, 'up', '--pods', '--port', String(port), '--name', 'pod0', '--work-dir', work, '--timeout', '120s'],
    { stdio: ['ignore', 'pipe', 'pipe'], env },
  );
  let stderr = '';
  up.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => up.once('exit', (code) => r(code)));
  t.teardown(() => {
    if (up.exitCode === null) up.kill('SIGKILL');
  });
  const record = path.join(work, 'instance.json');
  const { pids } = await waitUntil('the controller to be ready', 60_000, () =>
    fs.existsSync(record) ? (JSON.parse(fs.readFileSync(record, 'utf8')) as { pids: number[] }) : undefined,
  );
  await waitUntil("pod 0's agent to have its directory", 30_000, () => fs.existsSync(path.join(work, 'agent-pod0')));
  up.kill('SIGTERM');
  const timer = setTimeout(() => up.kill('SIGKILL'), 30_000);
  const code = await exited;
  clearTimeout(timer);
  t.equal(code, 128 + 15, stderr);
  t.match(stderr, /SIGTERM while the instance starts: stopping what was started/);
  t.notOk(fs.existsSync(`/proc/${pids[0]}`), 'the controller is gone');
  t.notOk(fs.existsSync(work), 'the directory is gone: the agent and the controller left it');
});
