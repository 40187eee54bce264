// How jobs share a node, against a real controller and agent on this machine's 2 cores:
// EASY backfill on --timeout, --exclusive, --share, per-user limits, and a controller
// SIGKILLed with jobs running and queued. Every test ends by replaying the controller's
// event history: no two jobs ever held one core.
import t from 'tap';
import { startController, waitForNode } from '../helpers/daemons.js';
import { allocationOrder, history, overlaps, solo, soloOn } from './helpers.js';

t.test('backfill: a later job starts ahead only when it cannot delay the head of the queue', async (t) => {
  const s = await solo(t);
  const a = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['sleep', '30'], { timeout: 60 });
  await s.waitState(a.body.id, ['running']);
  const head = await s.submit({ ntasks: 1, cpusPerRank: 2 }, ['true']);
  t.match(head.body.reason, /needs 1 node with 2 free cores/, 'the head waits for both cores');
  const unbounded = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['sleep', '1']);
  t.equal(
    unbounded.body.state,
    'queued',
    'a 1-core job without a time limit could run now, but would hold a core the head needs for ever',
  );
  t.match(unbounded.body.reason, new RegExp(`waits behind job ${head.body.id}, which is first in the queue`));
  const short = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['sleep', '1'], { timeout: 5 });
  t.not(
    short.body.state,
    'queued',
    'a 1-core job that ends (by its --timeout 5) before the first job can (--timeout 60) is backfilled',
  );
  t.same(short.body.rankMap!.ranks[0]!.cpus, [1], 'on the free core');
  await s.waitState(short.body.id, ['succeeded']);
  t.equal((await s.job(unbounded.body.id)).state, 'queued', 'the unbounded job still waits behind the head');

  await s.controller.api(`/v1/jobs/${a.body.id}/cancel`, { method: 'POST' });
  await s.waitState(head.body.id, ['succeeded']);
  await s.waitState(unbounded.body.id, ['succeeded']);
  t.same(
    allocationOrder(s.controller),
    [a.body.id, short.body.id, head.body.id, unbounded.body.id],
    'the head started before the job queued behind it',
  );
  t.same(overlaps(history(s.controller)), [], 'no two jobs held one core');
});

t.test('--exclusive waits for an idle node and holds all of it; --share overlaps by request', async (t) => {
  const s = await solo(t);
  const a = await s.submit({ ntasks: 1, cpusPerRank: 1 });
  await s.waitState(a.body.id, ['running']);
  const shared = await s.cli([
    'run',
    '-q',
    '--share',
    '-n',
    '1',
    '--',
    'sh',
    '-c',
    'grep Cpus_allowed_list /proc/self/status',
  ]);
  t.equal(shared.code, 0, '--share runs beside the running job at once');
  t.match(shared.stdout, /Cpus_allowed_list:\s+0-1/, "on the whole node, the running job's core included");
  const both = await s.cli(['run', '-q', '--share', '--exclusive', '-n', '1', '--', 'true']);
  t.not(both.code, 0, '--share with --exclusive is refused');
  const x = await s.submit({ ntasks: 1, exclusive: true }, ['sleep', '30']);
  t.equal(x.body.state, 'queued');
  t.match(x.body.reason, /needs 1 idle node \(--exclusive\)/);
  const late = await s.submit({ ntasks: 1, share: true }, ['true']);
  t.match(
    late.body.reason,
    /waits behind job/,
    'a --share job without a time limit would keep the node from being idle: it waits behind the exclusive one',
  );

  await s.controller.api(`/v1/jobs/${a.body.id}/cancel`, { method: 'POST' });
  const running = await s.waitState(x.body.id, ['running']);
  t.same(running.rankMap!.ranks[0]!.cpus, [0, 1], 'the exclusive job got the whole node');
  const queue = await s.queue();
  t.match(queue.find((q) => q.id === x.body.id)!.held, { cpus: 2 }, 'and holds both cores');
  const normal = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['true']);
  t.match(normal.body.reason, /needs 1 node with 1 free core/, 'a normal job waits while it runs');
  const share = await s.submit({ ntasks: 1, share: true }, ['true']);
  t.match(share.body.reason, /needs 1 node without an --exclusive job/, 'so does a --share job: exclusive means alone');
  await s.controller.api(`/v1/jobs/${x.body.id}/cancel`, { method: 'POST' });
  await s.waitState(normal.body.id, ['succeeded']);
  await s.waitState(share.body.id, ['succeeded']);
  await s.waitState(late.body.id, ['succeeded']);
  t.same(overlaps(history(s.controller)), [], 'no two jobs held one core, and the exclusive job was alone');
});

t.test('per-user limits: running jobs', async (t) => {
  const s = await solo(t, ['--max-jobs-per-user', '1']);
  const a = await s.submit({ ntasks: 1, cpusPerRank: 1 });
  await s.waitState(a.body.id, ['running']);
  const b = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['true']);
  t.equal(b.body.state, 'queued', 'a second job waits though a core is free');
  t.match(b.body.reason, /user admin runs 1 job, the most one user may \(--max-jobs-per-user 1\)/);
  await s.controller.api(`/v1/jobs/${a.body.id}/cancel`, { method: 'POST' });
  t.equal((await s.waitState(b.body.id, ['succeeded'])).state, 'succeeded', 'and starts when the first ends');
});

t.test('per-user limits: cores, and a job over the limit is refused at submit', async (t) => {
  const s = await solo(t, ['--max-cores-per-user', '1']);
  const never = await s.submit({ ntasks: 1, cpusPerRank: 2 }, ['true']);
  t.equal(never.status, 400);
  t.match(never.body, {
    code: 'RANKD_OVER_LIMIT',
    message: /can never run: the job needs 2 cores, more than the 1 one user may use/,
  });
  const a = await s.submit({ ntasks: 1, cpusPerRank: 1 });
  await s.waitState(a.body.id, ['running']);
  const b = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['true']);
  t.match(b.body.reason, /user admin runs on 1 core; 1 more would pass the limit of 1/);
  await s.controller.api(`/v1/jobs/${a.body.id}/cancel`, { method: 'POST' });
  await s.waitState(b.body.id, ['succeeded']);
});

t.test(
  'SIGKILL the controller with jobs running and queued: allocations and the queue survive, nothing starts twice',
  async (t) => {
    const s = await solo(t);
    const a = await s.submit({ ntasks: 1, cpusPerRank: 2 }, ['sleep', '12']);
    await s.waitState(a.body.id, ['running']);
    const b = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['sh', '-c', 'echo b']);
    const c = await s.submit({ ntasks: 1, cpusPerRank: 2 }, ['sh', '-c', 'echo c']);
    t.same([b.body.state, c.body.state], ['queued', 'queued']);

    const port = Number(new URL(s.controller.url).port);
    await s.controller.stop('SIGKILL');
    const second = await startController({ dataDir: s.controller.dataDir, port });
    t.teardown(() => second.stop());
    const s2 = soloOn(second);
    const queue = await s2.queue();
    t.same(
      queue.map((q) => [q.id, q.state, q.position, q.held?.cpus ?? null]),
      [
        [a.body.id, 'running', null, 2],
        [b.body.id, 'queued', 1, null],
        [c.body.id, 'queued', 2, null],
      ],
      'after the restart: the running job still holds both cores, the queue is in order',
    );
    await waitForNode(second, 'solo', 'ready');
    t.equal((await s2.job(b.body.id)).state, 'queued', 'the agent is back, but the cores are still held');
    for (const j of [a, b, c])
      t.equal((await s2.waitState(j.body.id, ['succeeded'], 30_000)).state, 'succeeded', `${j.body.id} succeeded`);
    const events = history(second);
    for (const j of [a, b, c]) {
      t.equal(
        events.filter((e) => e.kind === 'job.allocated' && e.subject === j.body.id).length,
        1,
        `${j.body.id} was allocated once`,
      );
      t.equal(
        events.filter((e) => e.kind === 'rank.started' && e.subject === `${j.body.id}/0`).length,
        1,
        `${j.body.id}'s rank started once`,
      );
    }
    t.same(allocationOrder(second), [a.body.id, b.body.id, c.body.id]);
    t.same(overlaps(events), [], 'no two jobs held one core across the restart');
  },
);
