// Fault 1: a host's link is cut while a DDP job trains across all hosts.
//
// The ranks on the other hosts block in gloo's allreduce, waiting for a peer that will
// never answer (for gloo's 30-minute default, had nobody stepped in). rankd must step in:
// the controller marks the host unreachable, then lost, and fails the job at once with
// "node host3 lost", killing the ranks elsewhere; the cut-off agent, hearing nothing for
// longer than the job's lease, ends its ranks by itself; when the link returns, the agent
// reconnects and reports. Nothing of the job may remain anywhere.
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../helpers/cluster.js';
import { startCluster } from './harness/cluster.js';
import { DDP_DEMO, PYTHON, parseDemo } from './harness/ddp-output.js';
import { lines } from './harness/labelled.js';
import { clusterTest } from './harness/requirements.js';
import { waitFor } from './harness/wait.js';

clusterTest(
  t,
  "a host's link is cut mid-job: lost, fail-fast, lease, reconnect, nothing left",
  { needsTorch: true, timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 3 });
    const cli = c.spawnRankd([
      'run',
      '-q',
      '-N',
      '3',
      '--ranks-per-node',
      '2',
      '--grace',
      '3',
      '--name',
      'ddp-long',
      '--',
      PYTHON,
      DDP_DEMO,
      '--iterations',
      '100000',
      '--sleep',
      '0.1',
    ]);
    const id = await waitFor('the job to be submitted', 60_000, async () => (await c.jobs())[0]?.id);
    // every rank has done a few allreduces: the job really spans the three hosts
    await waitFor('every rank to train', 180_000, async () => {
      if (!cli.running()) throw new Error(`rankd run ended early: ${cli.output().slice(-2000)}`);
      const job = await c.job(id);
      for (const r of job.ranks) if (parseDemo(lines(await c.logs(id, r.rank))).iterations.length < 3) return false;
      return job;
    });
    const before = await c.job(id);
    const cutRanks = before.ranks.filter((r) => r.node === 'host3');
    const otherRanks = before.ranks.filter((r) => r.node !== 'host3');
    t.equal(cutRanks.length, 2, 'two ranks on the host to cut');
    t.ok(
      before.ranks.every((r) => r.pid !== null && processAlive(r.pid)),
      'all six ranks run',
    );
    const firstEvent = c.events().length;

    c.cut('host3');

    // the controller: unreachable, then lost; the job fails fast with the reason
    await c.waitForNode('host3', 'lost', 60_000);
    const ended = await c.waitForJobEnd(id, 60_000);
    t.equal(ended.state, 'lost');
    t.equal(ended.reason, 'node host3 lost', 'the job failed with the reason "node host3 lost"');
    const cliExit = await cli.exited;
    t.not(cliExit.code, 0, 'rankd run exits non-zero');
    t.match(cli.stderr(), /job \S+ lost: node host3 lost/, 'rankd run says why');
    const hostStates = c
      .events()
      .slice(firstEvent)
      .filter((e) => e.kind === 'node.state' && e.subject === 'host3')
      .map((e) => `${e.data['from']}->${e.data['to']}`);
    t.same(hostStates.slice(0, 2), ['ready->unreachable', 'unreachable->lost'], 'host3 went unreachable, then lost');
    for (const r of ended.ranks.filter((x) => x.node !== 'host3')) {
      t.equal(r.state, 'exited', `rank ${r.rank} on ${r.node} has a recorded end`);
      t.ok(
        r.signal === 'SIGTERM' || r.signal === 'SIGKILL',
        `rank ${r.rank} on ${r.node} was killed (${r.signal}), not left hanging in its allreduce`,
      );
    }
    for (const r of otherRanks) t.notOk(processAlive(r.pid!), `rank ${r.rank} on ${r.node} is gone`);
    for (const r of ended.ranks.filter((x) => x.node === 'host3')) {
      t.equal(r.state, 'unknown', `rank ${r.rank} on the cut host: status unknown, never success`);
      t.equal(r.error, 'node host3 lost');
    }

    // the cut-off agent: nothing from the controller for longer than the lease, so it ends its ranks itself
    t.notOk(c.net.linkUp(c.agent('host3').host), 'the link is still cut');
    await waitFor("the cut host's ranks to be ended by their agent", 60_000, () =>
      cutRanks.every((r) => !processAlive(r.pid!)),
    );
    t.pass("the cut host's ranks ended while it was still cut off");
    // the agent logs the lease's end before it signals the ranks, but this process may see
    // them gone before it has read that line from the agent's pipe
    const leaseLine = new RegExp(`"jobId":"${id}".*lease expired without word from the controller`);
    const said = await waitFor('the agent to say it ended them on its lease', 10_000, () =>
      leaseLine.test(c.agent('host3').process.output()),
    ).catch((err: Error) => `${err.message}\n${c.agent('host3').process.output().slice(-3000)}`);
    t.equal(said, true, 'the agent says it ended them on its lease');
    t.notOk(c.net.linkUp(c.agent('host3').host), 'the link was still cut when it said so');

    // the link returns: the agent reconnects and reports what its ranks did
    c.restore('host3');
    await c.waitForNode('host3', 'ready', 60_000);
    const reports = await waitFor('the reconnected agent to report the ranks', 30_000, () => {
      const found = c.events().filter((e) => e.kind === 'rank.reported' && e.subject.startsWith(`${id}/`));
      return found.length >= 2 ? found : undefined;
    });
    t.same(
      reports
        .map((e) => ({ subject: e.subject, node: e.data['node'], state: e.data['state'] }))
        .sort((a, b) => a.subject.localeCompare(b.subject)),
      cutRanks.map((r) => ({ subject: `${id}/${r.rank}`, node: 'host3', state: 'exited' })),
      'it reports both ranks as ended',
    );
    const back = c
      .events()
      .slice(firstEvent)
      .filter((e) => e.kind === 'node.state' && e.subject === 'host3')
      .at(-1);
    t.match(back?.data, { from: 'lost', to: 'ready', reason: 'agent reconnected' });

    // nothing left anywhere: no process, no spool
    t.same(c.leftovers(), [], 'no process of the job remains in any namespace');
    for (const a of c.agents) {
      await waitFor(`${a.name} to release the job's spool`, 30_000, () => !existsSync(join(a.spoolDir, id)));
    }
    t.pass('every host released the job from its spool');
    c.checkHistory(t);
  },
);
