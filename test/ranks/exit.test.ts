// Exit codes and signals recorded exactly, and what the rank's process looks like:
// environment, session, process group, cgroup, stdin, memlock.
import fs from 'node:fs';
import t from 'tap';
import type { RankExit } from '#agent/ranks/index';
import { launch, readSpoolFile, runner, until } from './helpers.js';

t.test('exit codes and signals are recorded exactly', async (t) => {
  const r = runner(t);
  const events: RankExit[] = [];
  r.on('exit', (e) => events.push(e));
  const cases: [string, Partial<RankExit>][] = [
    ['exit 0', { outcome: 'exited', code: 0, signal: null }],
    ['exit 3', { outcome: 'exited', code: 3, signal: null }],
    ['exit 255', { outcome: 'exited', code: 255, signal: null }],
    // what a shell wrapper would confuse with SIGKILL
    ['exit 137', { outcome: 'exited', code: 137, signal: null }],
    ['kill -TERM $$', { outcome: 'signaled', code: null, signal: 'SIGTERM' }],
    ['kill -KILL $$', { outcome: 'signaled', code: null, signal: 'SIGKILL' }],
    ['kill -USR1 $$', { outcome: 'signaled', code: null, signal: 'SIGUSR1' }],
  ];
  for (const [rank, [script]] of cases.entries()) await r.start(launch('codes', rank, ['sh', '-c', script]));
  for (const [rank, [script, want]] of cases.entries()) {
    const exit = await r.exited('codes', rank);
    t.match(exit, { jobId: 'codes', rank, ...want }, script);
    t.ok(Date.parse(exit.endedAt) > 0, 'endedAt is a time');
  }
  t.equal(events.length, cases.length, 'one exit event per rank');
  t.same(new Set(events.map((e) => e.rank)), new Set(cases.map((_, i) => i)));
  t.ok(r.list().every((i) => i.state === 'ended'));
});

t.test("a rank's exit event never comes before its start has resolved", async (t) => {
  const r = runner(t);
  const events: number[] = [];
  r.on('exit', (e) => events.push(e.rank));
  for (const rank of [0, 1, 2, 3]) {
    await r.start(launch('order', rank, ['true']));
    t.notOk(events.includes(rank), `rank ${rank}: no exit event yet when start resolves`);
  }
  for (const rank of [0, 1, 2, 3]) await r.exited('order', rank);
  t.same(events.sort(), [0, 1, 2, 3]);
});

t.test("the rank gets the planned environment, not the agent's", async (t) => {
  const r = runner(t);
  process.env.RANKD_TEST_AGENT_ONLY = 'leak';
  t.teardown(() => delete process.env.RANKD_TEST_AGENT_ONLY);
  const script = 'echo "A=${RANKD_TEST_AGENT_ONLY-unset} B=$JOB_VAR P=$PYTHONUNBUFFERED W=$PWD"; pwd';
  await r.start(
    launch('env', 0, ['sh', '-c', script], { env: { PATH: '/usr/bin:/bin', JOB_VAR: 'x y=z' }, cwd: '/tmp' }),
  );
  await r.start(
    launch('env', 1, ['sh', '-c', script], { env: { PATH: '/usr/bin:/bin', PYTHONUNBUFFERED: '0' }, cwd: '/' }),
  );
  await r.exited('env', 0);
  await r.exited('env', 1);
  t.equal(readSpoolFile(r, 'env', 0, 'stdout'), 'A=unset B=x y=z P=1 W=/tmp\n/tmp\n');
  t.equal(
    readSpoolFile(r, 'env', 1, 'stdout'),
    'A=unset B= P=0 W=/\n/\n',
    'a job that sets PYTHONUNBUFFERED keeps its value',
  );
});

t.test('the rank leads its own session and process group, apart from its supervisor', async (t) => {
  const r = runner(t);
  // fields 5 and 6 of /proc/self/stat after the command name: pgrp and session
  const s = await r.start(
    launch('session', 0, [
      'sh',
      '-c',
      'echo $$ $(cut -d" " -f5,6 /proc/$$/stat); readlink /proc/$$/fd/0; cat /proc/$$/cgroup; exec sleep 300',
    ]),
  );
  await until(() => readSpoolFile(r, 'session', 0, 'stdout').split('\n').length >= 4, 'the rank to describe itself');
  const out = readSpoolFile(r, 'session', 0, 'stdout').split('\n');
  t.equal(out[0], `${s.pid} ${s.pid} ${s.pid}`, 'pid = pgid = sid');
  t.equal(s.pgid, s.pid);
  t.not(s.supervisorPid, s.pid);
  t.equal(out[1], '/dev/null', 'stdin is /dev/null');
  if (r.cgroupBase) {
    t.match(
      out.find((l) => l.startsWith('0::')),
      /\/rankd-session\.0$/,
      'the rank is in its own cgroup',
    );
    t.equal(s.cgroup?.endsWith('/rankd-session.0'), true);
  } else t.equal(s.cgroup, null);
  const supervisorStat = fs.readFileSync(`/proc/${s.supervisorPid}/stat`, 'utf8');
  t.not(
    Number(supervisorStat.slice(supervisorStat.lastIndexOf(')') + 2).split(' ')[2]),
    s.pid,
    "the supervisor is not in the rank's group",
  );
  const [exit] = await r.abortJob('session', 1000);
  t.equal(exit?.signal, 'SIGTERM');
});

t.test('RLIMIT_MEMLOCK: unlimited where the agent may grant it, else inherited with a warning', async (t) => {
  const r = runner(t);
  const s = await r.start(launch('memlock', 0, ['sh', '-c', 'ulimit -l']));
  await r.exited('memlock', 0);
  const limits = fs
    .readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max locked memory'))!;
  const soft = limits.slice('Max locked memory'.length).trim().split(/\s+/)[0]!;
  const seen = readSpoolFile(r, 'memlock', 0, 'stdout').trim();
  if (soft === 'unlimited') {
    t.equal(seen, 'unlimited');
    t.notOk(s.warnings.some((w) => w.includes('RLIMIT_MEMLOCK')));
  } else {
    t.equal(seen, String(Number(soft) / 1024), "the rank inherits the agent's limit");
    t.ok(
      s.warnings.some((w) => w.includes('RLIMIT_MEMLOCK')),
      'and the job is told',
    );
  }
});
