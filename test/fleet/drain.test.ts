// rankd node drain / resume against a real controller and two agents: a drained node takes
// no new ranks (a job that fits only there waits, or with --immediate fails, with the drain's reason), running ranks finish, the
// drain shows in `rankd nodes`, survives a controller restart, is an operator's act (403
// for the role user, audited), and resume makes the node usable again.
import t from 'tap';
import {
  runCli,
  startAgent,
  startController,
  waitForNode,
  waitUntil,
  type ControllerHandle,
} from '../helpers/daemons.js';

interface NodeLike {
  name: string;
  state: string;
  drain: { reason: string; by: string | null; at: string } | null;
}
interface JobLike {
  id: string;
  state: string;
  ranks: Array<{ node: string }>;
}

t.test('a drained node takes no new ranks, lets running ones finish, and comes back with resume', async (t) => {
  let controller: ControllerHandle = await startController();
  t.teardown(() => controller.stop());
  for (const name of ['n1', 'n2']) {
    const agent = startAgent(controller, { name });
    t.teardown(() => agent.stop());
  }
  for (const name of ['n1', 'n2']) await waitForNode(controller, name, 'ready');
  const env = () => ({ ...controller.clientEnv, RANKD_HOME: controller.dataDir });
  const cli = (args: string[]) => runCli(args, env(), 60_000);
  const nodes = async () => (await controller.api<{ nodes: NodeLike[] }>('/v1/nodes')).body.nodes;

  // a job already running on n1 when it is drained
  const sleeper = await controller.api<JobLike>('/v1/jobs', {
    method: 'POST',
    body: { command: ['sleep', '3'], cwd: '/tmp', placement: { ntasks: 1, nodelist: ['n1'] } },
  });
  t.equal(sleeper.status, 201, 'a sleeper submitted to n1');
  await waitUntil(
    'the sleeper to run',
    15_000,
    async () => (await controller.api<JobLike>(`/v1/jobs/${sleeper.body.id}`)).body.state === 'running',
  );

  const drained = await cli(['node', 'drain', 'n1', '--reason', 'bad DIMM']);
  t.equal(drained.code, 0, drained.stderr);
  t.match(drained.stderr, /node n1 drained: bad DIMM/);
  const n1 = (await nodes()).find((n) => n.name === 'n1')!;
  t.match(
    n1,
    { state: 'ready', drain: { reason: 'bad DIMM', by: 'admin' } },
    'n1 is drained, by the admin, and still ready',
  );
  t.equal((await nodes()).find((n) => n.name === 'n2')!.drain, null, 'n2 is not');
  const table = await cli(['nodes']);
  t.match(table.stdout, /^n1\s+ready, drained\s.*bad DIMM \(admin, /m, 'rankd nodes shows the drain and why');

  // a job that fits only on the drained node waits with the drain's reason (test/queue/drained.test.ts); --immediate refuses it
  const refused = await cli(['run', '-q', '--immediate', '-n', '1', '--nodelist', 'n1', '--', 'true']);
  t.equal(refused.code, 65, 'a job that names only n1 cannot start now');
  t.match(refused.stderr, /--immediate: the job cannot start now: node n1 drained: bad DIMM/, 'and the error says why');
  const elsewhere = await cli(['run', '-q', '-N', '1', '--', 'true']);
  t.equal(elsewhere.code, 0, elsewhere.stderr);
  const jobs = (await controller.api<{ jobs: JobLike[] }>('/v1/jobs')).body.jobs;
  t.same(
    (await controller.api<JobLike>(`/v1/jobs/${jobs[0]!.id}`)).body.ranks.map((r) => r.node),
    ['n2'],
    'a job that may go anywhere goes to n2',
  );
  const two = await cli(['run', '-q', '--immediate', '-N', '2', '--', 'true']);
  t.equal(two.code, 65, 'two nodes are not to be had while one is drained');
  t.match(two.stderr, /node n1 drained: bad DIMM/);

  const slept = await waitUntil('the sleeper to end', 20_000, async () => {
    const v = (await controller.api<JobLike>(`/v1/jobs/${sleeper.body.id}`)).body;
    return ['succeeded', 'failed', 'cancelled'].includes(v.state) ? v : undefined;
  });
  t.equal(slept.state, 'succeeded', 'the rank running on n1 when it was drained finished normally');

  // roles: a user may not drain; an unknown node is a clear 404
  const user = await cli(['user', 'add', 'uma', '--role', 'user', '--unix-user', 'nobody', '--json']);
  const umaToken = (JSON.parse(user.stdout) as { token: string }).token;
  const denied = await controller.api<{ code: string; message: string }>('/v1/nodes/n2/drain', {
    method: 'POST',
    token: umaToken,
    body: {},
  });
  t.equal(denied.status, 403);
  t.match(denied.body, { code: 'RANKD_FORBIDDEN', message: /may not drain a node/ });
  const unknown = await cli(['node', 'drain', 'nope']);
  t.not(unknown.code, 0);
  t.match(
    unknown.stderr,
    /404: unknown node "nope" \(RANKD_NODE_NOT_FOUND\)/,
    'an unknown node is named, with the stable code',
  );
  const badBody = await controller.api<{ code: string }>('/v1/nodes/n2/drain', {
    method: 'POST',
    body: { reason: 'x', extra: 1 },
  });
  t.equal(badBody.status, 400, 'an unknown field in the body is refused');

  // the drain is stored: it survives a controller restart
  const port = Number(new URL(controller.url).port);
  await controller.stop('SIGKILL');
  controller = await startController({ dataDir: controller.dataDir, port });
  t.match(
    (await nodes()).find((n) => n.name === 'n1'),
    { drain: { reason: 'bad DIMM', by: 'admin' } },
    'still drained after a restart',
  );
  await waitForNode(controller, 'n1', 'ready');

  const resumed = await cli(['node', 'resume', 'n1']);
  t.equal(resumed.code, 0, resumed.stderr);
  t.equal((await nodes()).find((n) => n.name === 'n1')!.drain, null, 'n1 is resumed');
  const back = await cli(['run', '-q', '-n', '1', '--nodelist', 'n1', '--', 'true']);
  t.equal(back.code, 0, `n1 takes ranks again: ${back.stderr}`);

  const audit = await cli(['audit', '--json']);
  const { entries } = JSON.parse(audit.stdout) as {
    entries: Array<{ route: string; user: string | null; status: number | null; resource: Record<string, string> }>;
  };
  t.ok(
    entries.some(
      (e) =>
        e.route === '/v1/nodes/:name/drain' && e.user === 'admin' && e.status === 200 && e.resource['node'] === 'n1',
    ),
    'the drain is in the audit log',
  );
  t.ok(
    entries.some((e) => e.route === '/v1/nodes/:name/drain' && e.user === 'uma' && e.status === 403),
    'so is the refusal',
  );
  t.ok(
    entries.some((e) => e.route === '/v1/nodes/:name/resume' && e.user === 'admin' && e.status === 200),
    'and the resume',
  );
});
