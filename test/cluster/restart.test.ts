// Gang restarts on a real cluster (rankd run --max-restarts): a lost node (its link cut, or
// its agent SIGKILLed) is left out of the next attempt, which runs on a replacement; a job
// that always fails spends its budget and fails with its last attempt's first failure. The
// count is the controller's, read back with `rankd job ID --json` as a user would.
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../helpers/cluster.js';
import { attemptIdOf } from './harness/history.js';
import { clusterTest } from './harness/requirements.js';
import { attemptLine, attemptLog, jobJson, restartingWorkload } from './harness/restarts.js';
import { startCluster } from './harness/cluster.js';
import { waitFor } from './harness/wait.js';

/**
 * How the host is lost: its link cut (its agent, cut off, ends its ranks on its lease), or
 * its agent SIGKILLed (its ranks run on, orphans, until a new agent reports them).
 */
type Loss = 'cut' | 'agent-killed';

for (const loss of ['cut', 'agent-killed'] as const) {
  clusterTest(
    t,
    `a node is lost mid-attempt (${loss}): attempt 1 runs on the 4th host, without the lost one, and succeeds`,
    { timeout: 300_000 },
    (t) => nodeLost(t, loss),
  );
}

async function nodeLost(t: Test, loss: Loss): Promise<void> {
  const c = await startCluster(t, { hosts: 4 });
  // attempt 0 runs until it is ended; attempt 1 says where it runs and exits 0
  const cli = c.spawnRankd([
    'run',
    '-q',
    '-N',
    '3',
    '--ranks-per-node',
    '1',
    '--max-restarts',
    '1',
    '--grace',
    '3',
    '--name',
    'node-lost',
    '--',
    ...restartingWorkload({ 0: 'sleep 600' }),
  ]);
  const id = await waitFor('the job to be submitted', 60_000, async () => (await c.jobs())[0]?.id);
  const first = await waitFor('attempt 0 to run on 3 hosts', 120_000, async () => {
    const job = await c.job(id);
    const printed = job.ranks.every((r) => r.pid !== null && r.outputBytes.stdout > 0);
    return job.state === 'running' && printed ? job : undefined;
  });
  const nodes0 = first.rankMap.ranks.map((r) => r.node);
  const spare = c.agents.map((a) => a.name).find((n) => !nodes0.includes(n))!;
  t.equal(new Set(nodes0).size, 3, `attempt 0 spans 3 hosts (${nodes0.join(', ')}), ${spare} is free`);
  // rank 0's host: attempt 1 also needs a new MASTER_ADDR
  const lost = first.rankMap.ranks[0]!.node;
  const lostRanks = first.ranks.filter((r) => r.node === lost);

  if (loss === 'cut') c.cut(lost);
  else t.equal((await c.killAgent(lost, 'SIGKILL')).signal, 'SIGKILL', `${lost}'s agent died of SIGKILL`);
  await c.waitForNode(lost, 'lost', 60_000);
  const job = await c.waitForJobEnd(id, 120_000);
  t.equal(job.state, 'succeeded', `the job succeeds on its second attempt (${job.reason})`);
  t.equal(job.exitCode, 0);
  const exit = await cli.exited;
  t.equal(exit.code, 0, `rankd run exits with the last attempt's code (${cli.stderr().slice(-1500)})`);

  const view = await jobJson(c, id);
  t.equal(view.attempt, 1, 'the job ended on attempt 1');
  t.equal(view.attempts.length, 2, '`rankd job ID --json` lists both attempts');
  const [a0, a1] = view.attempts;
  t.match(a0, { attempt: 0, state: 'lost', reason: `node ${lost} lost`, excluded: [lost] });
  t.same(a0!.nodes.slice().sort(), nodes0.slice().sort(), "attempt 0's nodes are its rank map's");
  t.match(a0!.firstFailure, { node: lost, state: 'unknown' }, 'its first failure is on the lost host');
  t.match(a1, { attempt: 1, state: 'succeeded', exitCode: 0, excluded: [] });
  t.notOk(a1!.nodes.includes(lost), `the lost host ${lost} is not in attempt 1's nodes`);
  t.ok(a1!.nodes.includes(spare), `attempt 1 runs on the 4th host, ${spare}`);
  t.same(view.excluded, [lost], 'the job excludes the lost host');
  const nodes1 = view.rankMap.ranks.map((r) => r.node);
  t.notOk(nodes1.includes(lost), "the lost host is in no rank of attempt 1's map");
  const lostAddress = c.agent(lost).host.address;
  t.not(view.rankMap.masterAddr, lostAddress, "attempt 1's MASTER_ADDR is not the lost host's");
  for (const r of view.ranks) {
    for (const attempt of [0, 1])
      t.equal(
        attemptLog(c, id, attempt, r.rank),
        `${attemptLine({ attempt, rank: r.rank, size: 3, job: id, max: 1 })}\n`,
        `rank ${r.rank}: attempt ${attempt}'s environment, in attempt ${attempt}'s log`,
      );
  }
  const started = c.events().filter((e) => e.kind === 'rank.started' && e.subject.startsWith(`${id}-1/`));
  t.same(
    started.map((e) => e.subject).sort(),
    [0, 1, 2].map((r) => `${attemptIdOf(id, 1)}/${r}`),
    'the agents knew attempt 1 as <job>-1',
  );

  if (loss === 'cut') {
    // the cut-off agent ends attempt 0's ranks on its lease; back online, it reports them
    await waitFor("the lost host's ranks to be ended by their agent", 60_000, () =>
      lostRanks.every((r) => !processAlive(r.pid!)),
    );
    c.restore(lost);
    await c.waitForNode(lost, 'ready', 60_000);
  } else {
    // nobody could end them: attempt 0's ranks on the host outlived their agent and their attempt
    t.ok(
      lostRanks.every((r) => processAlive(r.pid!)),
      `attempt 0's rank on ${lost} still runs, with no agent`,
    );
    await c.restartAgent(lost);
    await c.waitForNode(lost, 'ready', 60_000);
    await waitFor('the new agent to end the orphaned ranks of attempt 0', 60_000, () =>
      lostRanks.every((r) => !processAlive(r.pid!)),
    );
    const reported = c.events().filter((e) => e.kind === 'rank.reported' && e.subject.startsWith(`${id}/`));
    t.match(
      reported.map((e) => e.data),
      lostRanks.map(() => ({ node: lost, state: 'running', job: 'not live' })),
      'the new agent reported them as running, of an attempt no longer live, and they were ended',
    );
  }
  t.same(c.leftovers(), [], 'no process of either attempt remains in any namespace');
  for (const a of c.agents)
    for (const attempt of [id, attemptIdOf(id, 1)])
      await waitFor(`${a.name} to release ${attempt}'s spool`, 30_000, () => !existsSync(join(a.spoolDir, attempt)));
  t.pass('every host released both attempts from its spool');
  c.checkHistory(t);
}

clusterTest(
  t,
  "a job that always fails spends --max-restarts 2: 3 attempts, and it fails with the last one's first failure",
  { timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 2 });
    // rank 1 fails with 10 + the attempt, after a line on stderr; rank 0 waits to be ended
    const run = await c.rankd(
      [
        'run',
        '-q',
        '-N',
        '2',
        '--ranks-per-node',
        '1',
        '--max-restarts',
        '2',
        '--grace',
        '3',
        '--',
        'sh',
        '-c',
        'if [ "$RANK" = 1 ]; then echo "attempt $RANKD_ATTEMPT gives up" >&2; exit $((10 + RANKD_ATTEMPT)); fi; ' +
          'exec sleep 300',
      ],
      180_000,
    );
    const [summary] = await c.jobs();
    const id = summary!.id;
    const view = await jobJson(c, id);
    t.equal(view.state, 'failed');
    t.equal(view.exitCode, 12, "the job's exit code is its last attempt's first failure's");
    const node1 = view.rankMap.ranks[1]!.node;
    t.equal(view.reason, `rank 1 on ${node1} exited with code 12`, 'and so is its reason');
    t.equal(run.code, 12, `rankd run exits 12 (${run.stderr.slice(-1500)})`);
    t.equal(view.attempt, 2);
    t.same(
      view.attempts.map((a) => [a.attempt, a.state, a.exitCode, a.firstFailure?.rank, a.firstFailure?.exitCode]),
      [
        [0, 'failed', 10, 1, 10],
        [1, 'failed', 11, 1, 11],
        [2, 'failed', 12, 1, 12],
      ],
      'three attempts, each failed by rank 1 with its own code',
    );
    t.same(view.attempts[2]!.firstFailure!.lastLines, ['attempt 2 gives up'], "the last attempt's last stderr line");
    t.same(view.excluded, [], 'an exit code leaves no node out');
    t.same(
      c
        .events()
        .filter((e) => e.kind === 'job.allocated' && e.subject === id)
        .map((e) => e.data['attempt']),
      [0, 1, 2],
      'three attempts allocated, in order',
    );
    t.same(c.leftovers(), [], 'no process of any attempt remains');
    c.checkHistory(t);
  },
);
