// rankd controller --exclude-after K against a real controller and two agents: ranks on n1
// killed by SIGBUS (a hardware-like signal: the node failed the attempt) drain n1 at the
// K-th failure, with a reason that names the count, the jobs and the failures, through the
// same drain as `rankd node drain` (stored, in the history and the audit log, the controller
// as the actor, counted in /metrics); `rankd node resume` brings it back, and the failures
// from before the resume do not drain it again at the next single one. 0 turns it off.
// Lost nodes count as failures too, and the count is the store's: it survives a SIGKILLed
// controller.
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';
import { drainReason } from '#controller/nodes/auto-drain';
import { scratchDir } from '../helpers/scratch.js';

interface NodeLike {
  name: string;
  drain: { reason: string; by: string | null; at: string } | null;
}

/** A rank on n1 that dies by SIGBUS, as a rank on a node with bad memory does; no core file. */
const SIGBUS_ON_N1 = ['run', '-q', '-n', '1', '--nodelist', 'n1', '--', 'sh', '-c', 'ulimit -c 0; kill -BUS $$'];

function metric(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test('a node that failed K attempts within an hour is drained, and resume brings it back', async (t) => {
  const { controller, env } = await localCluster(t, ['n1', 'n2']);
  const node = async (name: string) =>
    (await controller.api<{ nodes: NodeLike[] }>('/v1/nodes')).body.nodes.find((n) => n.name === name)!;
  const failOnN1 = async () => {
    const r = await runCli(SIGBUS_ON_N1, env);
    t.equal(r.code, 135, `the rank died by SIGBUS (128+7): ${r.stderr}`);
    const { jobs } = (await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs?limit=1')).body;
    return jobs[0]!.id;
  };
  const drains = async () => metric((await controller.api<string>('/metrics')).body, 'rankd_node_auto_drains_total');

  t.equal(await drains(), 0, 'no auto-drain yet, but the series is there');
  const first = await failOnN1();
  t.equal((await node('n1')).drain, null, 'one failure (K = 2 by default) does not drain n1');

  const second = await failOnN1();
  const drained = await waitUntil('n1 to be drained', 10_000, async () => (await node('n1')).drain ?? undefined);
  t.equal(drained.by, 'controller', 'the controller is the actor');
  t.match(drained.reason, /^auto-drained: failed 2 attempts within an hour \(/, 'the reason names the count');
  t.match(drained.reason, new RegExp(`job ${first}: rank 0 on n1 was killed by SIGBUS; job ${second}: `));
  t.equal((await node('n2')).drain, null, 'n2, which failed nothing, is not drained');
  t.equal(await drains(), 1, 'rankd_node_auto_drains_total counts it');

  const table = await runCli(['nodes'], env);
  t.match(
    table.stdout,
    /^n1\s+ready, drained\s.*auto-drained: failed 2 attempts.*\(controller, /m,
    'rankd nodes shows it',
  );
  const refused = await runCli(['run', '-q', '--immediate', '-n', '1', '--nodelist', 'n1', '--', 'true'], env);
  t.equal(refused.code, 65, 'a job that names only n1 cannot start now');
  t.match(refused.stderr, /node n1 drained: auto-drained: failed 2 attempts/, 'and says why');
  const elsewhere = await runCli(['run', '-q', '-n', '1', '--', 'true'], env);
  t.equal(elsewhere.code, 0, `a job that may go anywhere runs (on n2): ${elsewhere.stderr}`);

  const audit = JSON.parse((await runCli(['audit', '--json'], env)).stdout) as {
    entries: Array<{ source: string; method: string; route: string; resource: Record<string, string>; reason: string }>;
  };
  t.ok(
    audit.entries.some(
      (e) =>
        e.source === 'controller' &&
        e.method === 'AUTO' &&
        e.route === '/v1/nodes/:name/drain' &&
        e.resource['node'] === 'n1' &&
        e.reason === drained.reason,
    ),
    'the auto-drain is in the audit log, with its reason',
  );

  // resume: n1 takes ranks again, and its two old failures no longer count
  const resumed = await runCli(['node', 'resume', 'n1'], env);
  t.equal(resumed.code, 0, resumed.stderr);
  t.equal((await node('n1')).drain, null, 'n1 is resumed');
  const back = await runCli(['run', '-q', '-n', '1', '--nodelist', 'n1', '--', 'true'], env);
  t.equal(back.code, 0, `n1 takes ranks again: ${back.stderr}`);
  await failOnN1();
  t.equal((await node('n1')).drain, null, 'one failure after the resume does not drain n1 again');
  const fourth = await failOnN1();
  const again = await waitUntil('n1 to be drained again', 10_000, async () => (await node('n1')).drain ?? undefined);
  t.match(again.reason, /^auto-drained: failed 2 attempts within an hour/, 'the second failure after it does');
  t.notMatch(again.reason, new RegExp(`job ${first}:`), 'counting only the failures after the resume');
  t.match(again.reason, new RegExp(`job ${fourth}: `));
  t.equal(await drains(), 2);
});

t.test('--exclude-after 0 drains nothing; --exclude-after 3 waits for the third failure', async (t) => {
  for (const k of [0, 3]) {
    await t.test(`--exclude-after ${k}`, async (t) => {
      const controller = await startController({ extra: ['--exclude-after', String(k)] });
      t.teardown(() => controller.stop());
      const agent = startAgent(controller, { name: 'n1' });
      t.teardown(() => agent.stop());
      await waitForNode(controller, 'n1', 'ready');
      const env = { ...controller.clientEnv, RANKD_HOME: controller.dataDir };
      const drain = async () =>
        (await controller.api<{ nodes: NodeLike[] }>('/v1/nodes')).body.nodes.find((n) => n.name === 'n1')!.drain;
      for (let i = 1; i <= 3; i++) {
        const r = await runCli(SIGBUS_ON_N1, env);
        t.equal(r.code, 135, r.stderr);
        if (i < 3) t.equal(await drain(), null, `not drained after ${i} failures`);
      }
      if (k === 0) t.equal(await drain(), null, 'never drained when it is off');
      else t.match(await drain(), { reason: /^auto-drained: failed 3 attempts within an hour/, by: 'controller' });
    });
  }
});

t.test('rankd controller --exclude-after refuses what is not a whole number', async (t) => {
  const dataDir = scratchDir('rankd-ctl-');
  for (const bad of ['-1', 'two', '1.5']) {
    const r = await runCli(['controller', '--listen', '127.0.0.1:0', '--exclude-after', bad, '--data-dir', dataDir]);
    t.equal(r.code, 64, `--exclude-after ${bad}: exit 64`);
    t.match(r.stderr, /--exclude-after/, 'the error names the option');
    t.notOk(existsSync(join(dataDir, 'controller.json')), 'and no controller started');
  }
});

t.test(
  'nodes lost during attempts count too: two lost attempts drain the node; the jobs go on elsewhere',
  async (t) => {
    // 200 ms heartbeats: a silent node is lost after 2.4 s
    const controller = await startController({ heartbeatMs: 200 });
    t.teardown(() => controller.stop());
    const n2 = startAgent(controller, { name: 'n2' });
    t.teardown(() => n2.stop());
    await waitForNode(controller, 'n2', 'ready');
    const drain = async () =>
      (await controller.api<{ nodes: NodeLike[] }>('/v1/nodes')).body.nodes.find((n) => n.name === 'n1')!.drain;
    const scrape = async () => (await controller.api<string>('/metrics')).body;

    // each round: a job placed on n1 (the first candidate), whose agent is then SIGKILLed; its
    // rank (a bounded sleep) is left alone, as ranks outlive their agent by design
    const loseAttemptOnN1 = async (round: number) => {
      const n1 = startAgent(controller, { name: 'n1' });
      t.teardown(() => n1.stop('SIGKILL'));
      await waitForNode(controller, 'n1', 'ready');
      const job = await controller.api<{ id: string }>('/v1/jobs', {
        method: 'POST',
        body: {
          name: `lost-${round}`,
          command: ['sh', '-c', '[ "$RANKD_ATTEMPT" = 1 ] && exit 0; sleep 8'],
          cwd: '/tmp',
          placement: { ntasks: 1, nodes: 1 },
          maxRestarts: 1,
        },
      });
      t.equal(job.status, 201, JSON.stringify(job.body));
      const id = job.body.id;
      const view = async () =>
        (await controller.api<{ state: string; attempts: Array<{ nodes: string[]; state: string }> }>(`/v1/jobs/${id}`))
          .body;
      await waitUntil(`round ${round}: the job to run on n1`, 15_000, async () => {
        const v = await view();
        return v.state === 'running' && v.attempts[0]?.nodes[0] === 'n1';
      });
      await n1.stop('SIGKILL');
      const done = await waitUntil(`round ${round}: the job to end`, 20_000, async () => {
        const v = await view();
        return v.state === 'succeeded' || v.state === 'failed' ? v : undefined;
      });
      t.equal(done.state, 'succeeded', `round ${round}: attempt 1 succeeded`);
      t.match(
        done.attempts,
        [
          { state: 'lost', nodes: ['n1'] },
          { state: 'succeeded', nodes: ['n2'] },
        ],
        'elsewhere',
      );
      return id;
    };

    const first = await loseAttemptOnN1(1);
    t.equal(await drain(), null, 'one lost attempt does not drain n1');
    const second = await loseAttemptOnN1(2);
    const drained = await waitUntil('n1 to be drained', 10_000, async () => (await drain()) ?? undefined);
    t.equal(drained.by, 'controller');
    t.match(
      drained.reason,
      new RegExp(`^auto-drained: failed 2 attempts within an hour \\(job ${first}: .+; job ${second}: `),
    );
    const text = await scrape();
    t.equal(metric(text, 'rankd_node_auto_drains_total'), 1);
    t.equal(metric(text, 'rankd_job_restarts_total{reason="node-lost"}'), 2, 'both restarts counted as node-lost');
  },
);

t.test('the failures are counted from the store: a controller SIGKILLed between them still drains', async (t) => {
  let controller = await startController();
  t.teardown(() => controller.stop());
  const agent = startAgent(controller, { name: 'n1' });
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'n1', 'ready');
  const env = () => ({ ...controller.clientEnv, RANKD_HOME: controller.dataDir });
  const drain = async () =>
    (await controller.api<{ nodes: NodeLike[] }>('/v1/nodes')).body.nodes.find((n) => n.name === 'n1')!.drain;

  t.equal((await runCli(SIGBUS_ON_N1, env())).code, 135);
  t.equal(await drain(), null, 'one failure');
  const port = Number(new URL(controller.url).port);
  await controller.stop('SIGKILL');
  controller = await startController({ dataDir: controller.dataDir, port });
  await waitForNode(controller, 'n1', 'ready');
  t.equal(await drain(), null, 'still one failure after the restart');
  t.equal((await runCli(SIGBUS_ON_N1, env())).code, 135);
  t.match(await drain(), { reason: /^auto-drained: failed 2 attempts within an hour/, by: 'controller' }, 'two');
});

t.test("an auto-drain's reason keeps within the 500 characters a drain's reason may hold", async (t) => {
  const failure = (i: number) => ({ node: 'n1', at: i, jobId: `j${i}`, attempt: i % 3, reason: 'x'.repeat(80) });
  const short = drainReason([failure(0), failure(1)]);
  t.equal(
    short,
    `auto-drained: failed 2 attempts within an hour (job j0: ${'x'.repeat(80)}; job j1 attempt 1: ${'x'.repeat(80)})`,
  );
  const long = drainReason(Array.from({ length: 20 }, (_, i) => failure(i)));
  t.equal(long.length, 500);
  t.match(long, /^auto-drained: failed 20 attempts within an hour \(job j0: /, 'the count is whole');
  t.match(long, /…\)$/, 'and the cut is marked');
});
