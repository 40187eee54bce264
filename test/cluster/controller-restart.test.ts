// Fault 2: the controller is SIGKILLed mid-job while logs flow, then restarted.
//
// The ranks never notice: their output goes to the agents' spool files, and the agents
// resend from whatever offset the restarted controller says it holds. `rankd run`
// resumes its stream from its last event id. The job completes, every line is stored
// once and in order, every exit code is recorded, and the restart grace period keeps
// the fleet from being judged while it reconnects.
//
// The hosts here present generated topologies (`--root`): the planner sees a 2-core
// machine that is not this one, and the ranks run pinned on the real CPUs.
import t from 'tap';
import type { MachineSpec } from '../helpers/sysfs-fixture.js';
import { startCluster } from './harness/cluster.js';
import { splitLabelled } from './harness/labelled.js';
import { clusterTest } from './harness/requirements.js';
import { waitFor } from './harness/wait.js';
import { countingWorkload, expectedStderr, expectedStdout } from './harness/workloads.js';

const LINES = 3000;

const generated = (host: number): MachineSpec => ({
  packages: 1,
  coresPerPackage: 2,
  threadsPerCore: 1,
  cpu: { modelName: 'rankd cluster test host' },
  host: { hostname: `generated${host}` },
});

clusterTest(
  t,
  'the controller is SIGKILLed mid-job while logs flow and restarted: nothing lost, nobody lost',
  { timeout: 300_000 },
  async (t) => {
    // The agents' lease is 12 heartbeats: a controller that stays away longer has its jobs
    // ended by the agents, as it should. Starting a controller on a loaded 2-core machine
    // (the suite runs two files at once) has taken 19 s here, so the lease is 36 s, the same
    // for the lost deadline; the restart grace is 18 s.
    const c = await startCluster(t, {
      hosts: 3,
      heartbeatMs: 3000,
      machines: [generated(1), generated(2), generated(3)],
    });
    const facts = await c.api.get<{ cpu: { model: string | null; pus: number }; host: { hostname: string | null } }>(
      '/v1/nodes/host2/facts',
    );
    t.match(
      facts.body,
      { cpu: { model: 'rankd cluster test host', pus: 2 }, host: { hostname: 'generated2' } },
      'the agent presents its generated topology',
    );

    const cli = c.spawnRankd([
      'run',
      '-q',
      '-N',
      '3',
      '--ranks-per-node',
      '2',
      '--name',
      'logs-across-restart',
      '--',
      ...countingWorkload({ lines: LINES, pauseEvery: 100, pauseS: 0.4 }),
    ]);
    const id = await waitFor('the job to be submitted', 60_000, async () => (await c.jobs())[0]?.id);
    const flowing = await waitFor('output to flow from every rank', 120_000, async () => {
      const job = await c.job(id);
      return job.ranks.every((r) => r.outputBytes.stdout > 200) ? job : undefined;
    });
    t.ok(
      flowing.ranks.some((r) => r.outputBytes.stdout < expectedStdout(r.rank, LINES).length),
      'the kill comes while ranks are still writing',
    );
    const firstProcess = c.controller;

    const afterKill = c.events().length;
    const killed = await c.killController('SIGKILL');
    t.equal(killed.signal, 'SIGKILL', 'the controller died of SIGKILL');
    // the ranks write on while nobody stores their output
    await new Promise((r) => setTimeout(r, 1000));
    await c.restartController();
    t.not(c.controller.pid, firstProcess.pid, 'a new controller process');

    const job = await c.waitForJobEnd(id, 180_000);
    t.equal(job.state, 'succeeded', `the job ran to completion (${job.reason})`);
    t.equal(job.exitCode, 0);
    const exit = await cli.exited;
    t.equal(exit.code, 0, `rankd run followed the job across the restart and exits 0 (${cli.stderr().slice(-1000)})`);

    const streamed = splitLabelled(cli.stdout());
    const streamedErr = splitLabelled(cli.stderr());
    for (const r of job.ranks) {
      t.equal(r.exitCode, 0, `rank ${r.rank}: exit code recorded`);
      const out = await c.logs(id, r.rank, 'stdout');
      const err = await c.logs(id, r.rank, 'stderr');
      // t.ok, not t.equal: a diff of 1,500 lines says less than the line that follows
      t.ok(
        out === expectedStdout(r.rank, LINES),
        `rank ${r.rank}: every stdout line stored once and in order (${out.length} bytes)`,
      );
      t.ok(err === expectedStderr(r.rank, LINES), `rank ${r.rank}: every stderr line stored once and in order`);
      t.ok(
        (streamed.byRank.get(r.rank) ?? []).join('\n') + '\n' === expectedStdout(r.rank, LINES),
        `rank ${r.rank}: rankd run printed every line once, labelled`,
      );
      t.ok(
        (streamedErr.byRank.get(r.rank) ?? []).join('\n') + '\n' === expectedStderr(r.rank, LINES),
        `rank ${r.rank}: and every stderr line`,
      );
    }

    const events = c.events();
    const judged = events.slice(afterKill).filter((e) => e.kind === 'node.state' && e.data['to'] === 'lost');
    t.same(judged, [], 'no node was declared lost across the restart');
    t.ok(
      events.some((e) => e.kind === 'rank.output.size' && e.data['reason'] === 'controller restarted'),
      'the restart is in the history',
    );
    for (const a of c.agents)
      t.notMatch(a.process.output(), /lease expired/, `${a.name}: the controller was back within the lease`);
    for (const name of ['host1', 'host2', 'host3']) t.equal((await c.waitForNode(name, 'ready')).state, 'ready');
    t.same(c.leftovers(), [], 'no process of the job remains in any namespace');
    c.checkHistory(t);
  },
);
