// Gang restarts across a controller SIGKILL. The count lives in the controller's store:
// killed while a job waits out its --restart-delay, or while a failed attempt's ranks are
// being ended, the restarted controller resumes the loop exactly once: the next attempt is
// the one that was due, none is skipped, none runs twice, and what ended the attempt is
// what was recorded before the kill.
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCluster, type Cluster } from './harness/cluster.js';
import type { HistoryEvent } from './harness/history.js';
import { clusterTest } from './harness/requirements.js';
import {
  PRINT_ATTEMPT,
  attemptLine,
  attemptLog,
  jobJson,
  restartingWorkload,
  type RestartingJobView,
} from './harness/restarts.js';
import { waitFor } from './harness/wait.js';

const DELAY_S = 10;

/** The job's events of one kind, in order. */
const eventsOf = (c: Cluster, id: string, kind: string): HistoryEvent[] =>
  c.events().filter((e) => e.kind === kind && e.subject === id);
const attemptsIn = (events: HistoryEvent[]) => events.map((e) => e.data['attempt']);

clusterTest(
  t,
  `the controller is SIGKILLed during each --restart-delay ${DELAY_S}: attempts 1 and 2 each run exactly once`,
  { timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 2 });
    // attempts 0 and 1: rank 1 fails at once (rank 0 waits to be ended); attempt 2 succeeds
    const fail = `sh -c '[ "$RANK" = 1 ] && exit 3; exec sleep 300'`;
    const cli = c.spawnRankd([
      'run',
      '-q',
      '-N',
      '2',
      '--ranks-per-node',
      '1',
      '--max-restarts',
      '2',
      '--restart-delay',
      String(DELAY_S),
      '--grace',
      '3',
      '--',
      ...restartingWorkload({ 0: fail, 1: fail }),
    ]);
    const id = await waitFor('the job to be submitted', 60_000, async () => (await c.jobs())[0]?.id);

    for (const next of [1, 2]) {
      await waitFor(`attempt ${next - 1} to fail and the job to wait for attempt ${next}`, 120_000, async () => {
        // the REST view, not the CLI's: polled often, well within the delay
        const job = (await c.job(id)) as RestartingJobView;
        return job.state === 'queued' && job.attempt === next ? job : undefined;
      });
      const killed = await c.killController('SIGKILL');
      t.equal(killed.signal, 'SIGKILL', `the controller is SIGKILLed while attempt ${next} waits`);
      t.same(
        attemptsIn(eventsOf(c, id, 'job.allocated')),
        Array.from({ length: next }, (_, k) => k),
        `attempt ${next} had not started when the controller died`,
      );
      await c.restartController();
    }

    const job = await c.waitForJobEnd(id, 180_000);
    t.equal(job.state, 'succeeded', `the job succeeds on attempt 2 (${job.reason})`);
    const exit = await cli.exited;
    t.equal(exit.code, 0, `rankd run followed the job across both restarts (${cli.stderr().slice(-1500)})`);
    const view = await jobJson(c, id);
    t.equal(view.attempt, 2);
    t.same(
      view.attempts.map((a) => [a.attempt, a.state, a.exitCode]),
      [
        [0, 'failed', 3],
        [1, 'failed', 3],
        [2, 'succeeded', 0],
      ],
      'three attempts, each recorded once',
    );
    t.same(attemptsIn(eventsOf(c, id, 'job.allocated')), [0, 1, 2], 'each attempt allocated once, none skipped');
    t.same(attemptsIn(eventsOf(c, id, 'job.released')), [0, 1, 2], 'each attempt released once');
    // the delay is kept across the kill: each attempt started no earlier than the end of the
    // one before plus its delay (the restart time the store holds)
    const allocated = eventsOf(c, id, 'job.allocated');
    for (const k of [0, 1]) {
      const ended = view.attempts[k]!;
      const delayMs = (ended.restartDelay ?? 0) * 1000;
      t.ok(delayMs >= DELAY_S * 1000, `attempt ${k + 1} was due ${delayMs} ms after attempt ${k} ended`);
      t.ok(
        allocated[k + 1]!.at >= Date.parse(ended.endedAt!) + delayMs,
        `attempt ${k + 1} started after its --restart-delay, across the controller's restart`,
      );
    }
    for (const rank of [0, 1])
      t.equal(
        attemptLog(c, id, 2, rank),
        `${attemptLine({ attempt: 2, rank, size: 2, job: id, max: 2 })}\n`,
        `rank ${rank} of attempt 2 ran with RANKD_ATTEMPT=2`,
      );
    t.same(c.leftovers(), [], 'no process of any attempt remains');
    c.checkHistory(t);
  },
);

clusterTest(
  t,
  "the controller is SIGKILLed during a failed attempt's teardown: it keeps its failure, the next runs once",
  { timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 2 });
    const gate = join(c.runDir, 'gate');
    mkdirSync(gate);
    // Attempt 0: rank 1 fails with 3 when the test opens its gate; rank 0 ignores SIGTERM, so
    // the attempt's teardown lasts the whole --grace (then its agent SIGKILLs it): a window
    // the test can kill the controller in. --restart-on 3: only rank 1's failure restarts it.
    const script =
      `${PRINT_ATTEMPT}; [ "$RANKD_ATTEMPT" != 0 ] && exit 0; ` +
      `if [ "$RANK" = 1 ]; then while [ ! -e '${gate}/open' ]; do sleep 0.1; done; ` +
      `echo "rank 1 gives up" >&2; exit 3; fi; trap '' TERM; exec sleep 600`;
    const cli = c.spawnRankd([
      'run',
      '-q',
      '-N',
      '2',
      '--ranks-per-node',
      '1',
      '--max-restarts',
      '1',
      '--restart-on',
      '3',
      '--grace',
      '30',
      '--',
      'sh',
      '-c',
      script,
    ]);
    const id = await waitFor('the job to be submitted', 60_000, async () => (await c.jobs())[0]?.id);
    await waitFor('attempt 0 to run', 120_000, async () => {
      const job = await c.job(id);
      return job.state === 'running' && job.ranks.every((r) => r.outputBytes.stdout > 0) ? job : undefined;
    });
    writeFileSync(join(gate, 'open'), '');
    const stopping = await waitFor('attempt 0 to be torn down', 60_000, async () => {
      const job = await c.job(id);
      const [r0, r1] = job.ranks;
      return job.reason.startsWith('stopping:') && r1!.state === 'exited' && r0!.state === 'running' ? job : undefined;
    });
    const node1 = stopping.ranks[1]!.node;
    t.equal(stopping.reason, `stopping: rank 1 on ${node1} exited with code 3`);

    const killed = await c.killController('SIGKILL');
    t.equal(killed.signal, 'SIGKILL', 'the controller is SIGKILLed while rank 0 outlives its SIGTERM');
    t.same(attemptsIn(eventsOf(c, id, 'job.released')), [], 'attempt 0 had not been released');
    await c.restartController();

    const job = await c.waitForJobEnd(id, 180_000);
    t.equal(job.state, 'succeeded', `the job goes on to attempt 1 and succeeds (${job.reason})`);
    const exit = await cli.exited;
    t.equal(exit.code, 0, `rankd run exits 0 (${cli.stderr().slice(-1500)})`);
    const view = await jobJson(c, id);
    t.equal(view.attempts.length, 2, 'two attempts');
    t.match(
      view.attempts[0],
      {
        attempt: 0,
        state: 'failed',
        reason: `rank 1 on ${node1} exited with code 3`,
        exitCode: 3,
        firstFailure: { rank: 1, exitCode: 3, lastLines: ['rank 1 gives up'] },
      },
      "attempt 0 ended with rank 1's failure, as recorded before the kill",
    );
    t.match(view.attempts[1], { attempt: 1, state: 'succeeded', exitCode: 0 });
    t.same(attemptsIn(eventsOf(c, id, 'job.allocated')), [0, 1], 'each attempt allocated once');
    t.same(attemptsIn(eventsOf(c, id, 'job.released')), [0, 1], 'each attempt released once');
    t.same(c.leftovers(), [], 'no process of either attempt remains');
    c.checkHistory(t);
  },
);

clusterTest(
  t,
  "the controller is SIGKILLed during a cancel's teardown: the job ends cancelled, nothing restarts",
  { timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 2 });
    // every rank ignores SIGTERM: the cancel's teardown lasts the whole --grace
    const cli = c.spawnRankd([
      'run',
      '-q',
      '-N',
      '2',
      '--ranks-per-node',
      '1',
      '--max-restarts',
      '2',
      '--grace',
      '30',
      '--',
      'sh',
      '-c',
      `${PRINT_ATTEMPT}; trap '' TERM; exec sleep 600`,
    ]);
    const id = await waitFor('the job to be submitted', 60_000, async () => (await c.jobs())[0]?.id);
    await waitFor('attempt 0 to run', 120_000, async () => {
      const job = await c.job(id);
      return job.state === 'running' && job.ranks.every((r) => r.outputBytes.stdout > 0) ? job : undefined;
    });
    const cancel = await c.rankd(['cancel', id], 60_000);
    t.equal(cancel.code, 0, `rankd cancel ${id} (${cancel.stderr})`);
    await waitFor('the cancel to be under way', 60_000, async () => (await c.job(id)).reason.startsWith('stopping:'));

    const killed = await c.killController('SIGKILL');
    t.equal(killed.signal, 'SIGKILL', 'the controller is SIGKILLed while the ranks outlive their SIGTERM');
    t.same(attemptsIn(eventsOf(c, id, 'job.released')), [], 'attempt 0 had not been released');
    await c.restartController();

    const job = await c.waitForJobEnd(id, 180_000);
    t.equal(job.state, 'cancelled', `the job ends cancelled (${job.reason})`);
    const exit = await cli.exited;
    t.not(exit.code, 0, 'rankd run exits non-zero');
    const view = await jobJson(c, id);
    t.same(
      view.attempts.map((a) => [a.attempt, a.state]),
      [[0, 'cancelled']],
      'one attempt, cancelled: a cancel is never restarted',
    );
    t.same(attemptsIn(eventsOf(c, id, 'job.allocated')), [0], 'no other attempt was allocated');
    t.same(c.leftovers(), [], 'no process remains');
    c.checkHistory(t);
  },
);
