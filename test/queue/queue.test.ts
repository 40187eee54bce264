// The queue against a real controller and agent on this machine's 2 cores: a job that
// does not fit waits with its reason; queued jobs start in priority order, then
// submission order; --immediate refuses to wait (exit 65); a job that can never fit is
// refused at submit; Ctrl-C on a queued `rankd run` removes it; `rankd plan` says when a
// job would wait; a user may not raise a priority.
import { spawn } from 'node:child_process';
import t from 'tap';
import { CLI, waitUntil } from '../helpers/daemons.js';
import { allocationOrder, history, solo } from './helpers.js';

t.test('queued jobs wait with a reason and start by priority, then submission, when cores free', async (t) => {
  const s = await solo(t);
  const hog = await s.submit({ ntasks: 1, cpusPerRank: 2 });
  t.equal(hog.status, 201, 'the first job is accepted');
  await s.waitState(hog.body.id, ['running']);
  t.same(hog.body.rankMap!.ranks[0]!.cpus, [0, 1], 'the first job holds both cores');

  const b = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['true']);
  const c = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['true']);
  const d = await s.submit({ ntasks: 1, cpusPerRank: 1 }, ['true'], { priority: 5 });
  for (const j of [b, c, d]) t.equal(j.body.state, 'queued', `${j.body.id} is queued`);
  t.match(b.body.reason, /needs 1 node with 1 free core; 0 have room now/, 'the reason names what it waits for');
  t.equal(b.body.rankMap, null, 'a queued job has no rank map yet');

  const queue = await s.queue();
  t.same(
    queue.map((q) => [q.id, q.state, q.position]),
    [
      [hog.body.id, 'running', null],
      [d.body.id, 'queued', 1],
      [b.body.id, 'queued', 2],
      [c.body.id, 'queued', 3],
    ],
    'the queue: the running job, then the higher priority, then submission order',
  );
  t.match(queue[0]!.held, { nodes: ['solo'], cpus: 2, gpus: 0 }, 'what the running job holds');
  const table = await s.cli(['queue']);
  t.equal(table.code, 0, table.stderr);
  t.match(
    table.stdout,
    new RegExp(`${d.body.id}\\s+admin\\s+queued\\s+1\\s+5\\s`),
    'rankd queue shows position and priority',
  );

  const plan = await s.cli(['plan', '-n', '1', '-c', '1']);
  t.equal(plan.code, 0, plan.stderr);
  t.match(plan.stderr, /would wait: needs 1 node with 1 free core/, 'rankd plan says a job would wait, and why');
  const planNow = await s.cli(['plan', '-n', '1', '-c', '1', '--immediate']);
  t.equal(planNow.code, 65, 'rankd plan --immediate exits 65 when the job would wait');

  const immediate = await s.cli(['run', '-q', '--immediate', '-n', '1', '-c', '1', '--', 'true']);
  t.equal(immediate.code, 65, '--immediate: exit 65');
  t.match(immediate.stderr, /cannot start now: needs 1 node with 1 free core.*RANKD_WOULD_WAIT/, 'with the reason');
  t.equal((await s.queue()).length, 4, 'and nothing was queued for it');

  await s.controller.api(`/v1/jobs/${hog.body.id}/cancel`, { method: 'POST' });
  for (const j of [b, c, d]) t.equal((await s.waitState(j.body.id, ['succeeded'])).state, 'succeeded');
  const order = allocationOrder(s.controller);
  t.same(order, [hog.body.id, d.body.id, b.body.id, c.body.id], 'allocations followed the queue order');
});

t.test('a job that can never fit is refused at submit, with the reason', async (t) => {
  const s = await solo(t);
  const r = await s.cli(['run', '-q', '-n', '3', '-c', '1', '--', 'true']);
  t.equal(r.code, 65, 'refused');
  t.match(r.stderr, /3 ranks but only 2 allowed cores/, 'the planner says why, on the idle cluster');
  const gpus = await s.submit({ ntasks: 1, gpusPerRank: 1 }, ['true']);
  t.equal(gpus.status, 400, 'GPUs a cluster without GPUs will never have');
  t.same(await s.queue(), [], 'nothing waits forever');
});

t.test('Ctrl-C on a queued rankd run removes it from the queue; it never runs', async (t) => {
  const s = await solo(t);
  const hog = await s.submit({ ntasks: 1, cpusPerRank: 2 });
  t.teardown(() => s.controller.api(`/v1/jobs/${hog.body.id}/cancel`, { method: 'POST' }));
  await s.waitState(hog.body.id, ['running']);
  const child = spawn(process.execPath, [CLI, 'run', '-n', '1', '--', 'true'], {
    env: { ...process.env, ...s.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await waitUntil('rankd run to say it is queued', 20_000, () => /queued: needs 1 node with 2 free cores/.test(stderr));
  const queued = (await s.queue()).find((q) => q.state === 'queued');
  t.ok(queued, 'the job is in the queue');
  child.kill('SIGINT');
  const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000))]);
  t.equal(code, 130, 'rankd run exits 130');
  t.match(stderr, /cancelled.*while queued/, 'and says the job was cancelled while queued');
  const job = await s.job(queued!.id);
  t.equal(job.state, 'cancelled');
  t.equal(job.rankMap, null, 'it never got a rank map');
  t.notOk(
    history(s.controller).some((e) => e.kind === 'job.allocated' && e.subject === queued!.id),
    'nor an allocation',
  );
  t.same(
    (await s.queue()).map((q) => q.id),
    [hog.body.id],
    'the queue holds only the running job',
  );
});

t.test('rankd run waits in the queue, says so, and streams once its job starts', async (t) => {
  const s = await solo(t);
  const hog = await s.submit({ ntasks: 1, cpusPerRank: 2 }, ['sleep', '2']);
  await s.waitState(hog.body.id, ['running']);
  const r = await s.cli(['run', '-n', '1', '--', 'sh', '-c', 'echo hello from $RANK']);
  t.equal(r.code, 0, r.stderr);
  t.match(
    r.stderr,
    /queued: needs 1 node with 2 free cores[\s\S]*started[\s\S]*RANK\s+NODE/,
    'queued, then started, then the rank map',
  );
  t.match(r.stdout, /^0: hello from 0$/m, 'the output of the job once it ran');
});

t.test('only operators and admins submit above the default priority', async (t) => {
  const s = await solo(t);
  const added = await s.cli([
    'user',
    'add',
    'alice',
    '--role',
    'user',
    '--unix-user',
    process.getuid?.() === 0 ? 'nobody' : String(process.env['USER'] ?? 'nobody'),
    '--json',
  ]);
  t.equal(added.code, 0, added.stderr);
  const token = (JSON.parse(added.stdout) as { token: string }).token;
  const high = await s.controller.api<{ message: string }>('/v1/jobs', {
    method: 'POST',
    token,
    body: { command: ['true'], placement: { ntasks: 1 }, priority: 10 },
  });
  t.equal(high.status, 403, 'a user may not raise a priority');
  t.match(high.body.message, /may not submit above the default priority 0/);
  const low = await s.controller.api<{ id: string; state: string }>('/v1/jobs', {
    method: 'POST',
    token,
    body: { command: ['true'], placement: { ntasks: 1 }, priority: -5 },
  });
  t.equal(low.status, 201, 'but may lower one');
  const queue = await s.controller.api<{ jobs: unknown[] }>('/v1/queue', { token });
  t.equal(queue.status, 200, 'and may read the whole queue');
});
