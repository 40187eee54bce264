// One controller per data directory (issue 25, item 6): a second `rankd controller` or
// `rankd up` on a data directory in use exits 69 with the running one's pid and URL,
// opens nothing there and dumps no log; the first goes on untouched (its jobs listed, new
// ones taken). A stale lock, of a dead pid or of a pid now used by another program, is
// taken over with a one-line notice.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { CLI, runCli, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { processAlive } from '../helpers/cluster.js';
import { scratchDir } from '../helpers/scratch.js';

const ALREADY = /^rankd: a controller is already running \(pid (\d+)\) at (https:\/\/127\.0\.0\.1:\d+)\n/;

/** Every file of a directory (not below) with its bytes, but the store's, which the live controller keeps writing. */
function snapshot(dir: string, skip: RegExp = /^rankd\.db/): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isFile() && !skip.test(e.name)) out[e.name] = readFileSync(join(dir, e.name), 'base64');
    else if (!e.isFile()) out[e.name + '/'] = '';
  }
  return out;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** System calls of a trace that created, wrote, renamed or removed something under `dir` (failed calls aside). */
function writesUnder(trace: string, dir: string): string[] {
  const mutating =
    /\b(creat|mkdirat|mkdir|unlinkat|unlink|renameat2|renameat|rename|linkat|link)\(|O_WRONLY|O_RDWR|O_CREAT/;
  return trace.split('\n').filter((line) => line.includes(`"${dir}`) && mutating.test(line) && !/= -1 E/.test(line));
}

t.test(
  'a second `rankd controller` on a data directory in use exits 69, touches nothing, and the first goes on',
  async (t) => {
    const ctl = await startController();
    t.teardown(() => ctl.stop());
    const agent = startAgent(ctl, { name: 'lk1' });
    t.teardown(() => agent.stop());
    await waitForNode(ctl, 'lk1', 'ready');
    const before = await runCli(['run', '-q', '-n', '1', '--', 'echo', 'before'], ctl.clientEnv);
    t.equal(before.code, 0, before.stderr);
    const firstJob = (await runCli(['jobs', '--json'], ctl.clientEnv)).stdout;
    t.match(firstJob, /"state": ?"succeeded"/, 'the job is listed');

    const files = snapshot(ctl.dataDir);
    const lock = JSON.parse(readFileSync(join(ctl.dataDir, 'controller.pid'), 'utf8')) as { pid: number };
    t.equal(lock.pid, ctl.pid, 'the lock names the running controller');

    const args = ['controller', '--listen', '127.0.0.1:0', '--data-dir', ctl.dataDir];
    const strace = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
    const traceFile = join(scratchDir('rankd-lock-trace-'), 'trace');
    const second = strace
      ? spawnSync(
          'strace',
          [
            '-f',
            '-qq',
            '-o',
            traceFile,
            '-e',
            'trace=open,openat,creat,mkdir,mkdirat,unlink,unlinkat,rename,renameat,renameat2,link,linkat',
            process.execPath,
            CLI,
            ...args,
          ],
          {
            encoding: 'utf8',
            timeout: 30_000,
          },
        )
      : spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
    t.equal(second.status, 69, 'exit 69');
    const m = ALREADY.exec(second.stderr);
    t.ok(m, `the message names the running one: ${second.stderr}`);
    t.equal(Number(m?.[1]), ctl.pid, 'its pid');
    t.equal(m?.[2], ctl.url, 'its URL, from controller.json');
    t.equal(second.stderr, m?.[0], 'one line: no log, no stack');
    t.equal(second.stdout, '', 'nothing logged on stdout');
    if (strace) {
      const trace = readFileSync(traceFile, 'utf8');
      t.match(
        trace,
        new RegExp(`"${ctl.dataDir}/controller\\.pid", O_RDONLY`),
        'the trace sees the data directory (the lock was read)',
      );
      t.same(
        writesUnder(trace, ctl.dataDir),
        [],
        'nothing in the data directory was created, written, renamed or removed',
      );
      t.notOk(
        /rankd\.db|audit\.jsonl|ca\.key|api-token/.test(
          trace
            .split('\n')
            .filter((l) => l.includes(ctl.dataDir))
            .join('\n'),
        ),
        'the store, the audit file, the CA key and the token were not even opened',
      );
    } else {
      t.comment('strace is not installed: the files are compared, the system calls are not traced');
    }

    t.same(
      snapshot(ctl.dataDir),
      files,
      'every file of the data directory is as it was (the store aside: the live controller writes it)',
    );
    t.ok(processAlive(ctl.pid), 'the first controller runs on');
    t.equal((await runCli(['jobs', '--json'], ctl.clientEnv)).stdout, firstJob, 'its jobs are listed as before');
    const after = await runCli(['run', '-q', '-n', '1', '--', 'echo', 'after'], ctl.clientEnv);
    t.equal(after.code, 0, after.stderr);
    t.equal(after.stdout, '0: after\n', 'and it takes new ones');
  },
);

t.test(
  'a stale lock is taken over with a one-line notice: a dead pid, and a pid now used by another program',
  async (t) => {
    const dead = spawnSync('true').pid;
    await waitUntil(`pid ${dead} gone`, 5000, () => !processAlive(dead));
    const cases = [
      { holder: { pid: dead, startTime: '1', host: hostname() }, why: `pid ${dead} is not running` },
      // this test's own pid, alive, but with a start time that is not its own: a reused pid
      {
        holder: { pid: process.pid, startTime: '1', host: hostname() },
        why: `pid ${process.pid} is now another program`,
      },
    ];
    for (const c of cases) {
      const dataDir = scratchDir('rankd-stale-');
      writeFileSync(join(dataDir, 'controller.pid'), JSON.stringify(c.holder) + '\n');
      const ctl = await startController({ dataDir });
      const lines = ctl
        .output()
        .split('\n')
        .filter((l) => l.startsWith('rankd: '));
      t.same(lines, [`rankd: took over the stale lock ${join(dataDir, 'controller.pid')} (${c.why})`], c.why);
      const lock = JSON.parse(readFileSync(join(dataDir, 'controller.pid'), 'utf8')) as { pid: number };
      t.equal(lock.pid, ctl.pid, 'the lock is the new controller’s');
      t.equal((await ctl.api('/v1/nodes')).status, 200, 'and it serves');
      await ctl.stop();
      t.notOk(existsSync(join(dataDir, 'controller.pid')), 'a clean stop removes the lock');
    }
  },
);

t.test('a second `rankd up` on the same home exits 69 and leaves the first cluster as it was', async (t) => {
  const home = scratchDir('rankd-up2-');
  const env = { ...process.env, RANKD_HOME: home, RANKD_URL: '', RANKD_TOKEN: '', RANKD_CA: '' };
  // the first finds the lock of a controller that died: it takes it over and says so
  const dead = spawnSync('true').pid;
  await waitUntil(`pid ${dead} gone`, 5000, () => !processAlive(dead));
  mkdirSync(join(home, 'controller'), { recursive: true, mode: 0o700 });
  writeFileSync(
    join(home, 'controller', 'controller.pid'),
    JSON.stringify({ pid: dead, startTime: '1', host: hostname() }) + '\n',
  );
  const port = await freePort();
  const first = spawn(process.execPath, [CLI, 'up', '--listen', `127.0.0.1:${port}`, '--name', 'upl'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  first.stderr.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<number | null>((resolve) => first.once('exit', (code) => resolve(code)));
  t.teardown(() => void (first.exitCode === null && first.kill('SIGKILL')));
  await waitUntil('the first rankd up to be ready', 60_000, () => {
    if (first.exitCode !== null) throw new Error(`rankd up exited ${first.exitCode}: ${err}`);
    return err.includes('client config written') || undefined;
  });
  const controllerPid = Number(/rankd: controller .*\(pid (\d+),/.exec(err)?.[1]);
  t.match(
    err,
    `rankd: the last controller of ${join(home, 'controller')} did not stop cleanly (pid ${dead} is not running); its lock is taken over\n`,
    'a stale lock: one line, and up goes on',
  );
  // what `rankd up` wrote for its clients
  const config = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8')) as {
    url: string;
    token: string;
    ca: string;
  };
  const clientEnv = { RANKD_HOME: home, RANKD_URL: config.url, RANKD_TOKEN: config.token, RANKD_CA: config.ca };
  const job = await runCli(['run', '-q', '-n', '1', '--', 'echo', 'kept'], clientEnv);
  t.equal(job.code, 0, job.stderr);
  const jobsBefore = (await runCli(['jobs', '--json'], clientEnv)).stdout;
  t.match(jobsBefore, /"state": ?"succeeded"/, 'the job is listed');
  const homeFiles = snapshot(home, /\.log$/);
  const dataFiles = snapshot(join(home, 'controller'));

  const second = await runCli(['up', '--listen', `127.0.0.1:${await freePort()}`, '--name', 'upl2'], clientEnv);
  t.equal(second.code, 69, 'exit 69');
  const m = ALREADY.exec(second.stderr);
  t.ok(m, second.stderr);
  t.equal(Number(m?.[1]), controllerPid, 'the running controller’s pid');
  t.equal(m?.[2], `https://127.0.0.1:${port}`, 'and URL');
  t.equal(second.stderr.split('\n').length, 3, `two lines, no log dumped: ${second.stderr}`);
  t.match(second.stderr, /use it as it is \("rankd nodes"\)/);
  t.same(snapshot(home, /\.log$/), homeFiles, 'config.json and the rest of the home are as they were');
  t.same(
    snapshot(join(home, 'controller')),
    dataFiles,
    'controller.json, the lock, the token and the CA are as they were',
  );

  t.ok(processAlive(controllerPid), 'the first controller runs on');
  t.equal((await runCli(['jobs', '--json'], clientEnv)).stdout, jobsBefore, 'its jobs are listed as before');
  const again = await runCli(['run', '-q', '-n', '1', '--', 'echo', 'still'], clientEnv);
  t.equal(again.stdout, '0: still\n', again.stderr);

  first.kill('SIGINT');
  t.equal(await exited, 0, 'the first stops cleanly on Ctrl-C');
  t.notOk(existsSync(join(home, 'controller', 'controller.pid')), 'and its lock is gone');
});
