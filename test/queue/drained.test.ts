// Drained nodes queue, they don't refuse (issue 25, item 7): a job that fits only on drained
// nodes waits in the queue with the drain's reason, --immediate exits 65 with it, resuming
// the node starts the job; a job that could not run even with every drained node back is
// still refused at once. Real controller, real agents, the built CLI.
import t from 'tap';
import { spawn } from 'node:child_process';
import { summarizeDrains } from '#controller/schedule/drained';
import { CLI, runCli, startAgent, startController, waitForNode, waitUntil } from '../helpers/daemons.js';

interface JobLike {
  id: string;
  state: string;
  reason: string;
  ranks: unknown[];
}

t.test('a job that fits only on a drained node waits with the drain reason and starts on resume', async (t) => {
  const ctl = await startController();
  t.teardown(() => ctl.stop());
  const agent = startAgent(ctl, { name: 'vm' });
  t.teardown(() => agent.stop());
  await waitForNode(ctl, 'vm', 'ready');
  const env = ctl.clientEnv;
  const jobs = async () => (await ctl.api<{ jobs: JobLike[] }>('/v1/jobs')).body.jobs;

  const drained = await runCli(['node', 'drain', 'vm', '--reason', 'bad DIMM'], env);
  t.equal(drained.code, 0, drained.stderr);

  const immediate = await runCli(['run', '--immediate', '-n', '1', '--', 'echo', 'now'], env);
  t.equal(immediate.code, 65, 'exit 65 with --immediate');
  t.match(
    immediate.stderr,
    /^rankd: .*--immediate: the job cannot start now: node vm drained: bad DIMM\b/m,
    immediate.stderr,
  );
  t.same(await jobs(), [], 'and nothing was stored');

  const plan = await runCli(['plan', '-n', '1'], env);
  t.equal(plan.code, 0, plan.stderr);
  t.match(
    plan.stderr,
    /rankd: a job of this spec would wait: node vm drained: bad DIMM\n/,
    'rankd plan says why it would wait',
  );
  t.equal((await runCli(['plan', '--immediate', '-n', '1'], env)).code, 65, 'rankd plan --immediate exits 65');

  const run = spawn(process.execPath, [CLI, 'run', '-n', '1', '--', 'echo', 'resumed'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => void (run.exitCode === null && run.kill('SIGKILL')));
  let out = '';
  let err = '';
  run.stdout.on('data', (d: Buffer) => (out += d));
  run.stderr.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<number | null>((resolve) => run.once('close', (code) => resolve(code)));
  await waitUntil('rankd run to say the job is queued', 15_000, () => /queued: /.test(err));
  t.match(err, /^rankd: job \S+ queued: node vm drained: bad DIMM$/m, 'rankd run says the job waits on the drain');
  const [queued] = await jobs();
  t.match(queued, { state: 'queued', reason: 'node vm drained: bad DIMM' }, 'the job is queued with the drain reason');
  t.same((await ctl.api<JobLike>(`/v1/jobs/${queued!.id}`)).body.ranks, [], 'no rank was created');
  const queue = await runCli(['queue'], env);
  t.match(queue.stdout, /node vm drained: bad DIMM/, 'rankd queue shows the reason');

  const resumed = await runCli(['node', 'resume', 'vm'], env);
  t.equal(resumed.code, 0, resumed.stderr);
  t.equal(await exited, 0, `the job ran once the node was resumed: ${err}`);
  t.equal(out, '0: resumed\n');
  t.match(await jobs(), [{ id: queued!.id, state: 'succeeded' }]);
});

t.test(
  'several drained nodes: the reasons of the ones the job could use; a job that never fits is refused',
  async (t) => {
    const ctl = await startController();
    t.teardown(() => ctl.stop());
    for (const name of ['d1', 'd2', 'd3']) {
      const agent = startAgent(ctl, { name });
      t.teardown(() => agent.stop());
    }
    for (const name of ['d1', 'd2', 'd3']) await waitForNode(ctl, name, 'ready');
    const env = ctl.clientEnv;
    for (const [name, reason] of [
      ['d1', 'fan'],
      ['d2', 'fan'],
      ['d3', 'bad DIMM'],
    ] as const) {
      const r = await runCli(['node', 'drain', name, '--reason', reason], env);
      t.equal(r.code, 0, r.stderr);
    }
    const all = await runCli(['run', '--immediate', '-N', '2', '--', 'true'], env);
    t.equal(all.code, 65);
    t.match(
      all.stderr,
      /cannot start now: nodes d1,d2 drained: fan; node d3 drained: bad DIMM/,
      'grouped by reason, in name order',
    );
    const listed = await runCli(['run', '--immediate', '--nodelist', 'd3', '--', 'true'], env);
    t.match(
      listed.stderr,
      /cannot start now: node d3 drained: bad DIMM/,
      '--nodelist: only the drains of the nodes it names',
    );

    const never = await runCli(['run', '-N', '4', '--', 'true'], env);
    t.equal(never.code, 65, 'a job that cannot run even with every drained node back is refused, not queued');
    t.match(never.stderr, /-N 4 asks for more nodes than the 3 nodes that match/);
    t.same((await ctl.api<{ jobs: unknown[] }>('/v1/jobs')).body.jobs, [], 'nothing was queued');
  },
);

t.test('the summary of many drains stays bounded', async (t) => {
  const node = (name: string, drain: string) => ({ name, address: null, facts: {} as never, drain });
  const nodes = [
    ...Array.from({ length: 40 }, (_, i) => node(`n${i + 1}`, 'rack 3 power')),
    node('a', 'fan'),
    node('b', 'bad DIMM'),
    node('c', 'firmware'),
  ];
  const text = summarizeDrains(nodes);
  t.equal(
    text,
    'node a drained: fan; node b drained: bad DIMM; node c drained: firmware; 1 more drain reason',
    'three reasons in name order, the rest counted',
  );
  t.equal(summarizeDrains(nodes.slice(0, 40)), 'nodes n1,n2,n3,n4,… (+36) drained: rack 3 power');
});
