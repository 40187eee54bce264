// A rank's stdin, under the rank supervisor: the agent's end of a socket that the rank holds as
// fd 0, installed after the drop to the rank's user; the supervisor keeps no copy, so the
// agent learns when the rank closed it; and a rank outlives an agent that dies (SIGKILL)
// with its stdin ending there: EOF, nothing more.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { RankRunner, type RankExit } from '#agent/ranks/index';
import { alive, launch, runner, tmpSpool, until } from './helpers.js';

const isRoot = process.getuid?.() === 0;

function exitOf(r: RankRunner, jobId: string): Promise<RankExit> {
  return new Promise((resolve) => r.on('exit', (e) => e.jobId === jobId && resolve(e)));
}

t.test('the rank reads what the agent writes, then EOF', async (t) => {
  const r = runner(t);
  // as nobody when we are root: fd 0 is usable after the switch of user
  const started = await r.start(
    launch('in-native', 0, ['sh', '-c', 'wc -c; id -u; ls -l /proc/self/fd/0'], {
      stdin: true,
      ...(isRoot ? { user: 'nobody', cwd: '/' } : {}),
    }),
  );
  t.ok(started.stdin, 'the agent holds the other end');
  const ended = exitOf(r, 'in-native');
  started.stdin!.end('hello');
  t.match(await ended, { outcome: 'exited', code: 0 });
  const [count, uid, fd0] = fs
    .readFileSync(path.join(r.spool.rankDir('in-native', 0), 'stdout'), 'utf8')
    .trim()
    .split('\n');
  t.equal(count, '5', 'five bytes, then EOF');
  if (isRoot) t.not(uid, '0', 'the rank ran as nobody');
  t.match(fd0, /socket:\[/, "the rank's fd 0 is the agent's socket");
});

t.test("the supervisor keeps no copy of the rank's stdin", async (t) => {
  const r = runner(t);
  // closes its stdin and runs on: only the rank held it, so the agent sees its end now
  const started = await r.start(launch('close-native', 0, ['sh', '-c', 'exec 0<&-; sleep 30'], { stdin: true }));
  const socket = started.stdin!;
  socket.resume();
  // it may have closed while the start was being checked
  if (!socket.destroyed) await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  t.ok(alive(started.pid), 'the rank still runs');
  t.ok(alive(started.supervisorPid!), 'and so does its supervisor, which held no copy');
});

// An agent in a process of its own that starts one rank reading its stdin, writes three
// bytes into it and waits for the test's SIGKILL. Inline, as adopt.test.ts's.
const AGENT = `
import { RankRunner } from '#agent/ranks/index';
const [spoolDir, launch] = process.argv.slice(1);
const runner = new RankRunner({ spoolDir, allowRoot: true });
const started = await runner.start(JSON.parse(launch));
started.stdin.write('abc', () => process.stdout.write(JSON.stringify({ pid: started.pid }) + '\\nready\\n'));
setInterval(() => {}, 1 << 30);
`;

t.test('a rank outlives its agent, and its stdin ends with it', async (t) => {
  const spool = tmpSpool(t);
  const counted = path.join(spool, 'counted');
  const rankLaunch = launch('crash', 0, ['sh', '-c', `n=$(wc -c); echo $n > ${counted}; sleep 300`], { stdin: true });
  const agent = spawn(process.execPath, ['--input-type=module', '-e', AGENT, spool, JSON.stringify(rankLaunch)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  agent.stdout.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    agent.stdout.on('data', (d: string) => {
      out += d;
      if (out.includes('ready\n')) resolve();
    });
    agent.once('exit', (code) => reject(new Error(`the agent exited ${code} early:\n${out}`)));
  });
  const { pid } = JSON.parse(out.split('\n')[0]!) as { pid: number };
  t.notOk(fs.existsSync(counted), 'the rank waits on its stdin while the agent lives');
  const gone = new Promise((r) => agent.once('exit', r));
  agent.kill('SIGKILL');
  await gone;
  await until(() => fs.existsSync(counted) && fs.readFileSync(counted, 'utf8') !== '', 'the rank to read EOF');
  t.equal(fs.readFileSync(counted, 'utf8').trim(), '3', 'the rank read the three bytes, then EOF');
  t.ok(alive(pid), 'and runs on without the agent');

  const r = new RankRunner({ spoolDir: spool, allowRoot: true, livenessPollMs: 50 });
  t.teardown(async () => {
    await r.abortJob('crash', 0);
    r.forget('crash');
    r.close();
  });
  const adopted = await r.adopt();
  t.match(adopted, [{ jobId: 'crash', rank: 0, state: 'running', pid }], 'a new agent adopts it as any rank');
});
