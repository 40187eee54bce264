// abortJob and signal: SIGTERM, the grace period, SIGKILL, and nothing left behind, with
// and without a cgroup per rank.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { detectCgroupBase } from '#agent/ranks/index';
import { alive, groupExists, launch, readSpoolFile, runner, until } from './helpers.js';

const cgroupAvailable = detectCgroupBase('auto') !== null;

for (const cgroup of ['auto', 'off'] as const) {
  t.test(
    `abortJob leaves no process (cgroup ${cgroup})`,
    { skip: cgroup === 'auto' && !cgroupAvailable ? 'no writable cgroup v2 subtree here' : false },
    async (t) => {
      const r = runner(t, { cgroup });
      const jobId = `abort-${cgroup}`;
      // rank 0 dies on SIGTERM; rank 1 ignores it (and so do its children) and needs the
      // SIGKILL. Both leave children in their group, and one that left it with setsid.
      const children = 'sleep 300 & echo $!; setsid sleep 300 & echo $!; echo ready; wait';
      await r.start(launch(jobId, 0, ['sh', '-c', children]));
      await r.start(launch(jobId, 1, ['sh', '-c', `trap "" TERM; ${children}`]));
      await until(
        () => [0, 1].every((rank) => readSpoolFile(r, jobId, rank, 'stdout').includes('ready')),
        'both ranks to start their children',
      );
      const ranks = r.list();
      const pids = ranks.flatMap((i) => [i.pid!, i.supervisorPid!]);
      for (const rank of [0, 1])
        pids.push(
          ...readSpoolFile(r, jobId, rank, 'stdout')
            .split('\n')
            .filter((l) => /^\d+$/.test(l))
            .map(Number),
        );
      t.equal(pids.length, 8, 'pids of 2 ranks, 2 supervisors, 4 children recorded');
      t.ok(pids.every(alive), 'all alive before the abort');

      const exits = await r.abortJob(jobId, 300);
      t.match(exits, [
        { rank: 0, outcome: 'signaled', signal: 'SIGTERM' },
        { rank: 1, outcome: 'signaled', signal: 'SIGKILL' },
      ]);
      const survivors = pids.filter(alive);
      t.same(survivors, [], 'no recorded process is alive');
      for (const i of ranks) t.notOk(groupExists(i.pgid!), `the group of rank ${i.rank} is empty`);
      for (const i of ranks) if (i.cgroup) t.notOk(fs.existsSync(i.cgroup), `the cgroup of rank ${i.rank} is removed`);
      t.ok(r.list().every((i) => i.state === 'ended'));

      await t.rejects(
        r.start(launch(jobId, 2, ['true'])),
        { code: 'RANKD_RANK_JOB_ABORTED' },
        'no new rank of an aborted job',
      );
      r.forget(jobId);
      t.notOk(fs.existsSync(r.spool.jobDir(jobId)), "forget removes the job's spool");
      t.same(r.list(), []);
    },
  );
}

t.test('a rank that ends when its leader exits takes its leftovers with it', async (t) => {
  const r = runner(t);
  await r.start(launch('leftover', 0, ['sh', '-c', 'sleep 300 & echo $!; setsid sleep 300 & echo $!']));
  const exit = await r.exited('leftover', 0);
  t.match(exit, { outcome: 'exited', code: 0 });
  const pids = readSpoolFile(r, 'leftover', 0, 'stdout').trim().split('\n').map(Number);
  t.equal(pids.length, 2);
  t.same(pids.filter(alive), [], 'the background children are gone when the exit is reported');
});

t.test('signal reaches the whole group of one rank', async (t) => {
  const r = runner(t);
  const dir = r.spool.root;
  await r.start(
    launch('sig', 0, [
      'sh',
      '-c',
      `trap 'echo got USR1; exit 5' USR1; touch ${path.join(dir, 'armed')}; while :; do sleep 0.05; done`,
    ]),
  );
  await r.start(launch('sig', 1, ['sleep', '300']));
  await until(() => fs.existsSync(path.join(dir, 'armed')), 'the trap to be set');
  t.equal(r.signal('sig', 0, 'SIGUSR1'), 1);
  t.match(await r.exited('sig', 0), { outcome: 'exited', code: 5 });
  t.match(readSpoolFile(r, 'sig', 0, 'stdout'), /got USR1/);
  t.equal(r.signal('sig', 0, 'SIGUSR1'), 0, 'an ended rank is not signalled');
  t.equal(r.list().find((i) => i.rank === 1)?.state, 'running', 'the other rank is untouched');
  t.throws(() => r.signal('sig', 7, 'SIGTERM'), { code: 'RANKD_RANK_UNKNOWN' });
  t.throws(() => r.forget('sig'), { code: 'RANKD_RANK_JOB_RUNNING' });
  t.equal(r.signal('sig', 'all', 'SIGKILL'), 1);
  t.match(await r.exited('sig', 1), { outcome: 'signaled', signal: 'SIGKILL' });
});

t.test('abortJob waits for a rank that is still starting', async (t) => {
  const r = runner(t);
  const starting = r.start(launch('racing', 0, ['sleep', '300']));
  const exits = await r.abortJob('racing', 1000);
  const started = await starting;
  t.equal(exits.length, 1);
  t.match(exits[0], { rank: 0, outcome: 'signaled', signal: 'SIGTERM' });
  t.notOk(alive(started.pid));
});
