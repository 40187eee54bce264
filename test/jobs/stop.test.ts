// Fail-fast across agents, cancel and timeout: one path, and nothing left behind.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { CLI, runCli, waitUntil } from '../helpers/daemons.js';
import { groupMembers, localCluster, processAlive } from '../helpers/cluster.js';

interface RankLike {
  rank: number;
  node: string;
  pid: number | null;
  state: string;
  exitCode: number | null;
  signal: string | null;
}
interface JobLike {
  id: string;
  state: string;
  reason: string;
  exitCode: number | null;
  endedAt: string | null;
  ranks: RankLike[];
}

function assertNothingLeft(t: Test, job: JobLike): void {
  for (const r of job.ranks) {
    if (r.pid === null) continue;
    t.notOk(processAlive(r.pid), `rank ${r.rank} (pid ${r.pid}) is gone`);
    t.same(groupMembers(r.pid), [], `rank ${r.rank}'s process group is empty`);
  }
}

t.test(
  'fail-fast across two agents: one rank exits 1, the sleeping ones are gone within the grace period',
  async (t) => {
    const { env, controller } = await localCluster(t, ['node-a', 'node-b']);
    const started = Date.now();
    // rank 0 fails after the others are surely running; the others would sleep for 5 minutes
    const r = await runCli(
      [
        'run',
        '-N',
        '2',
        '-n',
        '4',
        '-q',
        '--grace',
        '3',
        '--',
        'sh',
        '-c',
        'if [ "$RANK" = 0 ]; then sleep 1; echo failing; exit 7; fi; exec sleep 300',
      ],
      env,
      60_000,
    );
    const elapsed = Date.now() - started;
    t.equal(r.code, 7, 'exit code of the failing rank');
    t.match(r.stderr, /failed: rank 0 on node-a exited with code 7/);
    t.ok(elapsed < 60_000);
    const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
    const { body: job } = await controller.api<JobLike>(`/v1/jobs/${list.jobs[0]!.id}`);
    t.equal(job.state, 'failed');
    t.same(new Set(job.ranks.map((x) => x.node)), new Set(['node-a', 'node-b']), 'ranks on both agents');
    for (const x of job.ranks.slice(1))
      t.equal(x.signal, 'SIGTERM', `rank ${x.rank} ended by SIGTERM (within the grace period)`);
    assertNothingLeft(t, job);
  },
);

t.test('a rank that ignores SIGTERM is killed after the grace period', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const r = await runCli(
    [
      'run',
      '-n',
      '2',
      '-q',
      '--grace',
      '1',
      '--',
      'sh',
      '-c',
      'trap "" TERM; if [ "$RANK" = 0 ]; then sleep 0.5; exit 1; fi; while :; do sleep 0.1; done',
    ],
    env,
    60_000,
  );
  t.equal(r.code, 1);
  const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
  const { body: job } = await controller.api<JobLike>(`/v1/jobs/${list.jobs[0]!.id}`);
  t.equal(job.ranks[1]!.signal, 'SIGKILL');
  assertNothingLeft(t, job);
});

t.test('cancel ends every rank and the job says cancelled', async (t) => {
  const { controller } = await localCluster(t, ['solo']);
  const submit = await controller.api<JobLike>('/v1/jobs', {
    method: 'POST',
    body: { command: ['sleep', '300'], placement: { ntasks: 2 }, grace: 2 },
  });
  t.equal(submit.status, 201);
  const id = submit.body.id;
  await waitUntil(
    'job running',
    20_000,
    async () => (await controller.api<JobLike>(`/v1/jobs/${id}`)).body.state === 'running',
  );
  const cancel = await controller.api<JobLike>(`/v1/jobs/${id}/cancel`, { method: 'POST' });
  t.equal(cancel.status, 200);
  const job = await waitUntil('job ended', 20_000, async () => {
    const { body } = await controller.api<JobLike>(`/v1/jobs/${id}`);
    return body.endedAt ? body : undefined;
  });
  t.equal(job.state, 'cancelled');
  t.match(job.reason, /cancelled/);
  assertNothingLeft(t, job);
  const again = await controller.api<{ code: string }>(`/v1/jobs/${id}/cancel`, { method: 'POST' });
  t.equal(again.status, 409);
  t.equal(again.body.code, 'RANKD_JOB_ENDED');
});

t.test('timeout ends the job as timed-out', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const r = await runCli(['run', '-n', '2', '-q', '--timeout', '1', '--grace', '1', '--', 'sleep', '300'], env, 60_000);
  t.equal(r.code, 128 + 15, 'ranks ended by SIGTERM');
  t.match(r.stderr, /timed-out: timed out after 1 s/);
  const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
  const { body: job } = await controller.api<JobLike>(`/v1/jobs/${list.jobs[0]!.id}`);
  t.equal(job.state, 'timed-out');
  assertNothingLeft(t, job);
});

t.test('Ctrl-C in rankd run cancels the job and waits for its ranks', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const child = spawn(
    process.execPath,
    [CLI, 'run', '-n', '2', '--grace', '2', '--', 'sh', '-c', 'echo ready; exec sleep 300'],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));
  await waitUntil('both ranks printed', 20_000, () => (out.match(/ready/g) ?? []).length === 2);
  child.kill('SIGINT');
  const code = await exited;
  t.equal(code, 143, 'the ranks died of SIGTERM');
  t.match(err, /cancelling job/);
  const { body: list } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
  const { body: job } = await controller.api<JobLike>(`/v1/jobs/${list.jobs[0]!.id}`);
  t.equal(job.state, 'cancelled');
  assertNothingLeft(t, job);
});

t.test('fail policy "wait" lets the other ranks finish', async (t) => {
  const { env } = await localCluster(t, ['solo']);
  const r = await runCli(
    [
      'run',
      '-n',
      '2',
      '-q',
      '--fail-policy',
      'wait',
      '--',
      'sh',
      '-c',
      'if [ "$RANK" = 0 ]; then exit 4; fi; sleep 1; echo finished',
    ],
    env,
    60_000,
  );
  t.equal(r.code, 4);
  t.match(r.stdout, /^1: finished$/m, 'rank 1 ran to its end');
});
