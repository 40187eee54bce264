// rankd run as a user runs it: pinned ranks, labelled output, the job's exit code.
import t from 'tap';
import { runCli } from '../helpers/daemons.js';
import { groupMembers, localCluster } from '../helpers/cluster.js';

interface JobViewLike {
  id: string;
  state: string;
  reason: string;
  exitCode: number | null;
  ranks: Array<{
    rank: number;
    pid: number | null;
    state: string;
    exitCode: number | null;
    signal: string | null;
    planned: { cpus: number[] };
    actual: { cpus: number[]; verified: boolean } | null;
  }>;
}

t.test('two ranks on this 2-CPU machine are pinned to CPU 0 and CPU 1', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const r = await runCli(['run', '-n', '2', '--', 'sh', '-c', 'grep Cpus_allowed_list /proc/self/status'], env);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n').sort();
  t.same(lines, ['0: Cpus_allowed_list:\t0', '1: Cpus_allowed_list:\t1']);
  t.match(r.stderr, /ID \|\s+Node name \|\s+IP \| Ranks/, 'the rank map header is on stderr');

  const jobs = await controller.api<{ jobs: Array<{ id: string; state: string }> }>('/v1/jobs');
  const job = await controller.api<JobViewLike>(`/v1/jobs/${jobs.body.jobs[0]!.id}`);
  t.equal(job.body.state, 'succeeded');
  t.equal(job.body.exitCode, 0);
  for (const rank of job.body.ranks) {
    t.same(rank.planned.cpus, [rank.rank], `rank ${rank.rank} planned on CPU ${rank.rank}`);
    t.equal(rank.state, 'exited');
    t.equal(rank.exitCode, 0);
  }
});

t.test('the exit code propagates, stderr stays stderr, labels and -q work', async (t) => {
  const { env } = await localCluster(t, ['solo']);
  const failing = await runCli(
    [
      'run',
      '-n',
      '2',
      '-q',
      '--',
      'sh',
      '-c',
      'echo out; echo err >&2; [ "$RANK" = 1 ] && sleep 2; exit $((RANK + 3))',
    ],
    env,
  );
  t.equal(failing.code, 3, 'the first failing rank exit code (rank 1 is stopped by fail-fast before it exits 4)');
  t.same(failing.stdout.trim().split('\n').sort(), ['0: out', '1: out']);
  t.match(failing.stderr, /^[01]: err$/m);
  t.notMatch(failing.stderr, /Node name/, '-q hides the rank map');

  const custom = await runCli(['run', '-n', '1', '-q', '--label-format', '{rank}@{node}> ', '--', 'echo', 'hi'], env);
  t.equal(custom.stdout, '0@solo> hi\n');
  const raw = await runCli(['run', '-n', '1', '-q', '--no-label', '--', 'printf', 'no newline at the end'], env);
  t.equal(raw.stdout, 'no newline at the end\n', 'the partial last line is flushed');

  const signalled = await runCli(['run', '-n', '1', '-q', '--', 'sh', '-c', 'kill -USR1 $$'], env);
  t.equal(signalled.code, 128 + 10, 'killed by SIGUSR1 → 138');
});

t.test('programs that do not exist, bad users and bad cwds fail clearly', async (t) => {
  const { env } = await localCluster(t, ['solo']);
  const missing = await runCli(['run', '-n', '1', '-q', '--', 'no-such-program-rankd'], env);
  t.equal(missing.code, 127, "a shell's status for a missing command");
  t.match(missing.stderr, /failed to start: no-such-program-rankd: command not found/);
  const user = await runCli(['run', '-n', '1', '-q', '--user', 'no-such-user-rankd', '--', 'true'], env);
  t.equal(user.code, 1, 'a start failure no shell would meet ends the job with 1');
  t.match(user.stderr, /no-such-user-rankd/);
});

t.test('an impossible spec gets 400 with the reason; no token gets 401', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  const cli = await runCli(['run', '-n', '1', '-c', '64', '--', 'true'], env);
  t.equal(cli.code, 65);
  t.match(cli.stderr, /RANKD_PLAN_TOO_MANY_CPUS/);

  const rest = await controller.api<{ code: string; message: string }>('/v1/jobs', {
    method: 'POST',
    body: { command: ['true'], placement: { ntasks: 5 } },
  });
  t.equal(rest.status, 400);
  t.equal(rest.body.code, 'RANKD_PLAN_TOO_MANY_RANKS');
  t.match(rest.body.message, /node solo: 5 ranks/, 'names the node and the reason');
  const sockets = await controller.api<{ code: string; message: string }>('/v1/jobs', {
    method: 'POST',
    body: { command: ['true'], placement: { ntasks: 3, ranksPerNode: 'socket' } },
  });
  t.equal(sockets.status, 400);
  t.match(sockets.body.message, /nearest feasible spec: -n 1/, 'suggests the nearest feasible spec');

  const shell = await controller.api<{ code: string; message: string }>('/v1/jobs', {
    method: 'POST',
    body: { command: 'sh -c true' },
  });
  t.equal(shell.status, 400, 'a shell string is not a command');
  t.equal(shell.body.code, 'RANKD_INVALID_REQUEST');
  t.match(shell.body.message, /command/);

  const malformed = await controller.api<{ code: string }>('/v1/jobs', { method: 'POST', body: '{"command": [' });
  t.equal(malformed.status, 400);

  const unauth = await controller.api('/v1/jobs', { method: 'POST', body: { command: ['true'] }, token: null });
  t.equal(unauth.status, 401);
  const unauthLogs = await controller.api('/v1/jobs/x/logs', { token: 'wrong' });
  t.equal(unauthLogs.status, 401);
  const missing = await controller.api<{ code: string }>('/v1/jobs/jnope');
  t.equal(missing.status, 404);
});

t.test('an idempotency key returns the existing job', async (t) => {
  const { controller } = await localCluster(t, ['solo']);
  const body = { command: ['true'], placement: { ntasks: 1 }, idempotencyKey: 'train-42' };
  const first = await controller.api<JobViewLike>('/v1/jobs', { method: 'POST', body });
  const again = await controller.api<JobViewLike>('/v1/jobs', { method: 'POST', body });
  t.equal(first.status, 201);
  t.equal(again.status, 200);
  t.equal(again.body.id, first.body.id);
});

t.test(
  'a second live job on the same rank-0 node gets the next MASTER_PORT, and POST /v1/plan shows the port a job would get',
  async (t) => {
    const { controller } = await localCluster(t, ['solo']);
    // one core each, so that both jobs hold cores of their own at once
    const portOf = (env: Record<string, string>) => Number(env['MASTER_PORT']);
    const before = await controller.api<{ masterPort: number }>('/v1/plan', {
      method: 'POST',
      body: { placement: { ntasks: 1, cpusPerRank: 1 } },
    });
    const { body: first } = await controller.api<{
      id: string;
      rankMap: { masterPort: number; ranks: Array<{ env: Record<string, string> }> };
    }>('/v1/jobs', {
      method: 'POST',
      body: { command: ['sleep', '30'], placement: { ntasks: 1, cpusPerRank: 1 } },
    });
    t.teardown(() => controller.api(`/v1/jobs/${first.id}/cancel`, { method: 'POST' }));
    t.equal(first.rankMap.masterPort, before.body.masterPort, 'the plan showed the port the job got');
    t.equal(portOf(first.rankMap.ranks[0]!.env), first.rankMap.masterPort);
    const after = await controller.api<{ masterPort: number }>('/v1/plan', {
      method: 'POST',
      body: { placement: { ntasks: 1, cpusPerRank: 1 } },
    });
    t.equal(after.body.masterPort, first.rankMap.masterPort + 1, 'while the first job lives, its port is taken');
    const { body: second } = await controller.api<{ id: string; rankMap: { masterPort: number } }>('/v1/jobs', {
      method: 'POST',
      body: { command: ['true'], placement: { ntasks: 1, cpusPerRank: 1 } },
    });
    t.equal(second.rankMap.masterPort, first.rankMap.masterPort + 1);
  },
);

t.test('after the job, no process of it remains', async (t) => {
  const { env, controller } = await localCluster(t, ['solo']);
  // the rank leaves a background child behind in its process group
  const r = await runCli(['run', '-n', '2', '-q', '--', 'sh', '-c', 'sleep 300 & echo started'], env);
  t.equal(r.code, 0);
  const jobs = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
  const job = await controller.api<JobViewLike>(`/v1/jobs/${jobs.body.jobs[0]!.id}`);
  for (const rank of job.body.ranks) t.ok(rank.pid, 'pid recorded');
  // The rank's shell exited 0; its background sleep is its process group's business.
  // rankd ends what is left of the group when the rank ends.
  await new Promise((r) => setTimeout(r, 500));
  for (const rank of job.body.ranks)
    t.same(groupMembers(rank.pid!), [], `nothing left in rank ${rank.rank}'s process group`);
});
