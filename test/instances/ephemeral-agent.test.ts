// `rankd agent --ephemeral`, real processes: joined to a real `rankd controller
// --join-secret-file` with the secret on its standard input (as srun hands it), it runs ranks
// as its own user only, ends them and removes its directory when it stops or when the
// controller has been gone for the orphan timeout. A service agent still leaves its ranks
// running when it stops (the next agent adopts them).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import {
  CLI,
  runCli,
  startAgent,
  startController,
  waitForNode,
  waitUntil,
  type ControllerHandle,
} from '../helpers/daemons.js';
import { processAlive } from '../helpers/cluster.js';

const isRoot = process.getuid?.() === 0;
const SECRET = 'ephemeral-agent-test-secret-' + 'k'.repeat(20);
/** The agent's SIGTERM-to-SIGKILL grace for its ranks (EPHEMERAL_STOP_GRACE_MS in packages/agent/src/agent.ts). */
const STOP_GRACE_MS = 3000;

function scratch(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-ephemeral-test-'));
  fs.chmodSync(dir, 0o755); // a rank as another user must be able to reach it, were it ever started
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A controller whose CA and one join token come from SECRET, as `rankd up` starts it. */
async function secretController(t: Test, dir: string, extra: string[] = []): Promise<ControllerHandle> {
  const secretFile = path.join(dir, 'secret');
  fs.writeFileSync(secretFile, SECRET + '\n', { mode: 0o600 });
  const controller = await startController({
    dataDir: path.join(dir, 'controller-data'),
    extra: ['--join-secret-file', secretFile, ...extra],
    heartbeatMs: 500,
  });
  t.teardown(() => controller.stop('SIGKILL'));
  return controller;
}

interface Ephemeral {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `rankd agent --ephemeral --join-secret-file -` with the secret on standard input. */
function ephemeralAgent(t: Test, url: string, workDir: string, name: string, extra: string[] = []): Ephemeral {
  const child = spawn(
    process.execPath,
    [CLI, 'agent', '--ephemeral', '--work-dir', workDir, '--controller', url, '--join-secret-file', '-', ...extra],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, RANKD_NODE_NAME: name, RANKD_RECONNECT_MAX_MS: '300' } },
  );
  child.stdin.end(SECRET + '\n');
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-100_000)));
  child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-100_000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, output: () => out, exited };
}

/** `rankd run` left running in the background (a rank that outlives the test step); ended at teardown. */
function backgroundRun(t: Test, env: NodeJS.ProcessEnv, args: string[]): ChildProcess {
  const child = spawn(process.execPath, [CLI, 'run', ...args], { stdio: 'ignore', env: { ...process.env, ...env } });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

/** The pid a rank wrote into `file`, once it did. */
async function rankPid(file: string): Promise<number> {
  return waitUntil(`the rank's pid in ${file}`, 20_000, () => {
    const pid = Number.parseInt(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '', 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  });
}

t.test('ranks run as the agent own user only; a job naming another user is refused and never runs', async (t) => {
  const dir = scratch(t);
  const controller = await secretController(t, dir);
  const work = path.join(dir, 'instance');
  const agent = ephemeralAgent(t, controller.url, work, 'eph-users');
  await waitForNode(controller, 'eph-users', 'ready', 30_000);
  t.ok(fs.existsSync(path.join(work, 'agent-eph-users', 'state')), 'its state is in agent-NAME/ of the work dir');

  const me = await runCli(['run', '-n', '1', '-q', '--no-label', '--', 'id', '-u'], controller.clientEnv);
  t.equal(me.code, 0, me.stderr);
  t.equal(me.stdout.trim(), String(process.getuid!()), isRoot ? 'as root: root, who started it' : 'as its own user');

  if (isRoot) {
    // a directory nobody could write to, so that a rank that ran as nobody would leave its mark
    const drop = path.join(dir, 'drop');
    fs.mkdirSync(drop, { mode: 0o777 });
    fs.chmodSync(drop, 0o777);
    const mark = path.join(drop, 'ran-as-nobody');
    const other = await runCli(
      ['run', '-n', '1', '-q', '--user', 'nobody', '--', 'sh', '-c', `touch ${mark}`],
      controller.clientEnv,
    );
    t.not(other.code, 0, 'refused');
    t.match(other.stderr, /RANKD_RANK_BAD_USER/, 'with the bad-user code');
    t.match(other.stderr, /this agent is ephemeral: it runs ranks as its own user \(uid 0\) only, not as nobody/);
    t.notOk(fs.existsSync(mark), 'nothing ran as nobody');
    t.same(fs.readdirSync(drop), [], 'nothing at all');
  }
  agent.child.kill('SIGTERM');
  t.equal((await agent.exited).code, 0);
});

t.test('SIGTERM to the agent ends a running rank within the grace and removes its directory', async (t) => {
  const dir = scratch(t);
  const controller = await secretController(t, dir);
  const work = path.join(dir, 'instance');
  const agent = ephemeralAgent(t, controller.url, work, 'eph-stop');
  await waitForNode(controller, 'eph-stop', 'ready', 30_000);
  const pidFile = path.join(dir, 'rank.pid');
  // the rank ignores SIGTERM: only the SIGKILL after the grace ends it
  backgroundRun(t, controller.clientEnv, [
    ...['-n', '1', '-q', '--', 'sh', '-c'],
    `trap '' TERM; echo $$ > ${pidFile}; while :; do sleep 1; done`,
  ]);
  const pid = await rankPid(pidFile);
  t.ok(processAlive(pid), 'the rank runs');
  t.teardown(() => processAlive(pid) && process.kill(pid, 'SIGKILL'));

  agent.child.kill('SIGTERM');
  // waitUntil throws past its bound: the rank is gone within the grace and 5 s
  await waitUntil('the rank to be gone', STOP_GRACE_MS + 5000, () => !processAlive(pid));
  t.notOk(processAlive(pid), 'the rank is gone within the grace');
  const exit = await Promise.race([agent.exited, new Promise<null>((r) => setTimeout(() => r(null), 10_000).unref())]);
  t.ok(exit, 'the agent exited within 10 s of its ranks');
  t.equal(exit?.code, 0, agent.output().slice(-2000));
  t.notOk(fs.existsSync(path.join(work, 'agent-eph-stop')), 'agent-NAME/ is gone');
  t.notOk(fs.existsSync(work), 'and the work dir, which it was the last daemon of');
});

t.test('the orphan timeout: the controller dies, the agent exits 0 within it and a bound', async (t) => {
  const dir = scratch(t);
  const controller = await secretController(t, dir);
  const work = path.join(dir, 'instance');
  const timeoutS = 2;
  const agent = ephemeralAgent(t, controller.url, work, 'eph-orphan', ['--orphan-timeout', `${timeoutS}s`]);
  await waitForNode(controller, 'eph-orphan', 'ready', 30_000);
  const pidFile = path.join(dir, 'rank.pid');
  backgroundRun(t, controller.clientEnv, ['-n', '1', '-q', '--', 'sh', '-c', `echo $$ > ${pidFile}; exec sleep 300`]);
  const pid = await rankPid(pidFile);
  t.teardown(() => processAlive(pid) && process.kill(pid, 'SIGKILL'));

  const killed = Date.now();
  await controller.stop('SIGKILL');
  const bound = timeoutS * 1000 + 10_000;
  const exit = await Promise.race([agent.exited, new Promise<null>((r) => setTimeout(() => r(null), bound).unref())]);
  t.ok(exit, `the agent exited within ${bound} ms`);
  t.equal(exit?.code, 0, agent.output().slice(-2000));
  t.ok(Date.now() - killed >= timeoutS * 1000, 'not before the timeout');
  t.match(agent.output(), /the controller has been gone for 2 s; stopping/);
  t.notOk(processAlive(pid), 'its rank is ended too');
  t.notOk(fs.existsSync(work), 'its directory is gone');
});

t.test('a second daemon on a held subdirectory of the work dir is refused and leaves the first alone', async (t) => {
  const dir = scratch(t);
  const controller = await secretController(t, dir);
  const work = path.join(dir, 'instance');
  const first = ephemeralAgent(t, controller.url, work, 'eph-twice');
  await waitForNode(controller, 'eph-twice', 'ready', 30_000);
  const second = ephemeralAgent(t, controller.url, work, 'eph-twice');
  const exit = await second.exited;
  t.equal(exit.code, 69, 'the running one is the one to reach');
  t.match(second.output(), /is held by the running rankd daemon pid \d+.*RANKD_WORK_DIR_IN_USE/);
  t.ok(fs.existsSync(path.join(work, 'agent-eph-twice', 'state', 'node.crt')), "the first one's identity stays");
  const run = await runCli(['run', '-n', '1', '-q', '--no-label', '--', 'echo', 'still'], controller.clientEnv);
  t.equal(run.stdout.trim(), 'still', 'and it still runs ranks');

  // the same for a controller: a second ephemeral one in the work dir leaves the first one's data
  const ctl = spawn(
    process.execPath,
    [CLI, 'controller', '--ephemeral', '--work-dir', work, '--listen', '127.0.0.1:0', '--ready-json'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.teardown(() => {
    if (ctl.exitCode === null) ctl.kill('SIGKILL');
  });
  let ready = '';
  ctl.stdout.on('data', (d: Buffer) => (ready += d.toString()));
  await waitUntil('the ephemeral controller ready line', 60_000, () => ready.includes('\n'));
  const again = await runCli(['controller', '--ephemeral', '--work-dir', work, '--listen', '127.0.0.1:0']);
  t.equal(again.code, 69);
  t.match(again.stderr, /RANKD_WORK_DIR_IN_USE/);
  t.ok(fs.existsSync(path.join(work, 'controller', 'ca.key')), "the first controller's data stays");
  ctl.kill('SIGTERM');
  await new Promise((r) => ctl.once('exit', r));
  first.child.kill('SIGTERM');
  await first.exited;
  t.notOk(fs.existsSync(work), 'the last of them removed the work dir');
});

t.test('a service agent (not ephemeral) still leaves its ranks running when it stops', async (t) => {
  const dir = scratch(t);
  const controller = await secretController(t, dir);
  const agent = startAgent(controller, { name: 'service', spoolDir: path.join(dir, 'spool') });
  await waitForNode(controller, 'service', 'ready', 30_000);
  const pidFile = path.join(dir, 'rank.pid');
  backgroundRun(t, controller.clientEnv, ['-n', '1', '-q', '--', 'sh', '-c', `echo $$ > ${pidFile}; exec sleep 300`]);
  const pid = await rankPid(pidFile);
  t.teardown(() => processAlive(pid) && process.kill(pid, 'SIGKILL'));
  await agent.stop('SIGTERM');
  await new Promise((r) => setTimeout(r, STOP_GRACE_MS + 1000));
  t.ok(processAlive(pid), 'the rank outlives its agent, for the next one to adopt');
});

t.test('an ephemeral agent killed and started again under its name rejoins, as a restarted pod does', async (t) => {
  // one use: were the rejoin counted as an enrollment, the token would be spent
  const dir = scratch(t);
  const controller = await secretController(t, dir, ['--join-secret-uses', '1']);
  const work = path.join(dir, 'instance');
  const first = ephemeralAgent(t, controller.url, work, 'eph-again');
  const before = await waitForNode(controller, 'eph-again', 'ready', 30_000);
  first.child.kill('SIGKILL');
  await first.exited;
  const again = ephemeralAgent(t, controller.url, work, 'eph-again');
  await waitUntil('the new agent enrolled', 30_000, () =>
    again.output().includes('enrolled: node certificate received'),
  );
  const node = await waitForNode(controller, 'eph-again', 'ready', 30_000);
  t.equal(node.name, before.name, `the node is ready again under its name (agent: ${again.output().slice(-2000)})`);
  t.equal(again.child.exitCode, null, 'the new agent runs');
  const run = await runCli(['run', '-n', '1', '-q', '--', 'sh', '-c', 'echo rejoined'], controller.clientEnv);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /rejoined/, 'a job runs on it');
  const tokens = await runCli(['join-token', 'list', '--json'], controller.clientEnv);
  const list = JSON.parse(tokens.stdout) as { tokens: Array<{ uses: number; maxUses: number; description: string }> };
  const instance = list.tokens.find((k) => k.description === "the instance's join secret");
  t.same(instance && [instance.uses, instance.maxUses], [1, 1], 'the rejoin did not count as a second use');

  // a second agent under the name while the first runs (another work dir): the newer one wins,
  // the older one's certificate is revoked and it stops, naming why
  const third = ephemeralAgent(t, controller.url, path.join(dir, 'elsewhere'), 'eph-again');
  const exit = await Promise.race([again.exited, new Promise<null>((r) => setTimeout(() => r(null), 30_000))]);
  t.ok(exit, `the superseded agent exits (its output: ${again.output().slice(-1500)})`);
  t.match(again.output(), /RANKD_NODE_CERT_REVOKED|revoked/, 'because its certificate was revoked');
  await waitForNode(controller, 'eph-again', 'ready', 30_000);
  t.equal(third.child.exitCode, null, 'the newest agent holds the name');
});

t.test('the instance token takes over no name it did not enroll', async (t) => {
  const dir = scratch(t);
  const controller = await secretController(t, dir);
  // a service agent enrolled with an admin's join token
  const service = startAgent(controller, { name: 'svc-held', spoolDir: path.join(dir, 'spool') });
  t.teardown(() => service.stop('SIGKILL'));
  await waitForNode(controller, 'svc-held', 'ready', 30_000);
  const work = path.join(dir, 'instance');
  const intruder = ephemeralAgent(t, controller.url, work, 'svc-held');
  const exit = await intruder.exited;
  t.equal(exit.code, 77, 'refused: exit 77');
  t.match(intruder.output(), /\(RANKD_NODE_NAME_IN_USE\)/, 'the name is in use');
  t.match(intruder.output(), /rankd node remove svc-held/, 'the refusal names the remedy');
  t.ok((await waitForNode(controller, 'svc-held', 'ready', 5_000)).connected, 'the service agent keeps its link');
  t.notOk(fs.existsSync(work), 'the refused agent leaves nothing');
});
