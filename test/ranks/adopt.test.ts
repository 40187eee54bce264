// An agent SIGKILLed mid-job: its ranks keep running (they are not children that die with
// it), and a new agent on the same spool adopts them, reads the rest of their output and
// reports their exits, including those that ended while no agent was there.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { RankOutput, RankRunner, type RankExit, type StartedRank } from '#agent/ranks/index';
import { alive, groupExists, launch, runner, tmpSpool, until } from './helpers.js';

// An agent in a process of its own, which starts ranks, reports them, and waits for the
// test's SIGKILL: the real crash, not a simulated one. Inline, because tap would run a
// fixture file in this folder as a test.
const AGENT = `
import { RankRunner } from '#agent/ranks/index';
const [spoolDir, launches] = process.argv.slice(1);
const runner = new RankRunner({ spoolDir, allowRoot: true });
for (const launch of JSON.parse(launches)) process.stdout.write(JSON.stringify(await runner.start(launch)) + '\\n');
process.stdout.write('ready\\n');
setInterval(() => {}, 1 << 30);
`;

/** Runs the agent until its ranks started, then SIGKILLs it. */
async function crashAgent(spool: string, launches: unknown[]): Promise<StartedRank[]> {
  const agent = spawn(process.execPath, ['--input-type=module', '-e', AGENT, spool, JSON.stringify(launches)], {
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
  const gone = new Promise((r) => agent.once('exit', r));
  agent.kill('SIGKILL');
  await gone;
  return out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as StartedRank);
}

t.test('a new agent adopts the ranks of a SIGKILLed one', async (t) => {
  const spool = tmpSpool(t);
  const go = (name: string): string => path.join(spool, name);
  const started = await crashAgent(spool, [
    // runs across the crash and ends after adoption
    launch('crash', 0, [
      'sh',
      '-c',
      `echo before; while [ ! -e ${go('go0')} ]; do sleep 0.01; done; echo after; printf tail; exit 7`,
    ]),
    // ends while no agent is there
    launch('crash', 1, ['sh', '-c', `while [ ! -e ${go('go1')} ]; do sleep 0.01; done; echo done; exit 3`]),
    // loses its supervisor while no agent is there
    launch('crash', 2, ['sleep', '300']),
  ]);
  t.equal(started.length, 3);
  t.ok(
    started.every((s) => alive(s.pid)),
    'the ranks outlive the agent',
  );

  fs.writeFileSync(go('go1'), '');
  await until(() => fs.existsSync(path.join(spool, 'crash', '1', 'exit.json')), 'rank 1 to end without an agent');
  process.kill(started[2]!.supervisorPid!, 'SIGKILL');
  await until(() => !alive(started[2]!.supervisorPid!), 'rank 2 to lose its supervisor');

  const r = new RankRunner({ spoolDir: spool, allowRoot: true, livenessPollMs: 50 });
  t.teardown(() => r.close());
  const events: RankExit[] = [];
  r.on('exit', (e) => events.push(e));
  const adopted = await r.adopt();
  t.match(adopted, [
    { jobId: 'crash', rank: 0, state: 'running', pid: started[0]!.pid, argv: ['sh', '-c', String] },
    { jobId: 'crash', rank: 1, state: 'ended', exit: { outcome: 'exited', code: 3 } },
    { jobId: 'crash', rank: 2, state: 'ended', exit: { outcome: 'unknown', code: null, signal: null } },
  ]);
  t.match(adopted[2]!.exit!.reason, /supervisor ended without recording/);
  t.notOk(alive(started[2]!.pid), 'the unsupervised rank was ended, not left running');
  t.notOk(groupExists(started[2]!.pgid));

  const out = new RankOutput(r.spool);
  const first = await out.read('crash', 0, 'stdout', 0);
  t.equal(first.data.toString(), 'before\n', 'the output written before the crash is there');
  const rest: Buffer[] = [];
  const following = (async () => {
    for await (const c of out.follow('crash', 0, 'stdout', first.nextOffset)) rest.push(c.data);
  })();
  fs.writeFileSync(go('go0'), '');
  const exit = await r.exited('crash', 0);
  await following;
  t.match(exit, { outcome: 'exited', code: 7, signal: null });
  t.equal(Buffer.concat(rest).toString(), 'after\ntail', 'the rest of the output, last partial line included');
  t.match(events, [{ rank: 0, code: 7 }], 'the exit of the adopted rank is an event');
  // exit.json is the supervisor's last write; its own exit follows
  await until(() => !alive(started[0]!.supervisorPid!), 'the supervisor of rank 0 to end');
  t.pass('its supervisor ends too');
  r.forget('crash');
});

t.test('a supervisor killed under a live agent gives an unknown exit, never 0', async (t) => {
  const r = runner(t);
  const s = await r.start(launch('vanish', 0, ['sleep', '300']));
  process.kill(s.supervisorPid!, 'SIGKILL');
  const exit = await r.exited('vanish', 0);
  t.match(exit, { outcome: 'unknown', code: null, signal: null });
  t.notOk(alive(s.pid), 'the rank it supervised is ended');
});
