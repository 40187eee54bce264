// The restart policy (rankd run --max-restarts, --restart-on, --restart-delay): whether a
// failed attempt starts the job again, after how long, which nodes it leaves out, and how
// its failure reads. Pure functions over the records the store keeps.
import t from 'tap';
import type { AttemptFailure, JobState, JobSubmit } from '@rankd/protocol';
import type { AttemptRecord } from '#controller/jobs/attempts-repo';
import {
  MAX_BACKOFF_MS,
  describeFailure,
  failedNodes,
  restartDelayMs,
  restartLabel,
  restarts,
} from '#controller/jobs/restart-policy';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** A job's history: attempts that each ran `ranMs` (ended one after the other, from 0). */
function history(...ranMs: number[]): AttemptRecord[] {
  let at = 0;
  return ranMs.map((ran, attempt) => {
    const startedAt = at;
    at += ran;
    return {
      jobId: 'j',
      attempt,
      state: 'failed',
      reason: 'rank 0 on n1 exited with code 1',
      nodes: ['n1'],
      startedAt,
      endedAt: at,
      exitCode: 1,
      firstFailure: null,
      excluded: [],
      restartDelayMs: null,
    };
  });
}

t.test('restartDelayMs: the first restart waits --restart-delay, whatever how fast it failed', async (t) => {
  t.equal(restartDelayMs(0, history(5)), 0, 'no delay: at once');
  t.equal(restartDelayMs(30, history(5)), 30 * SECOND, '--restart-delay 30: 30 s');
  t.equal(restartDelayMs(0.25, history(5)), 250, 'fractions of a second are kept');
});

t.test('restartDelayMs: quick restarts back off 1, 2, 4 … s from max(delay, 1 s)', async (t) => {
  // attempt 0 failing fast does not count: it was not started by a restart
  t.equal(restartDelayMs(0, history(5, 5)), 1 * SECOND, 'second restart, attempt 1 ran 5 ms: 1 s');
  t.equal(restartDelayMs(0, history(5, 5, 5)), 2 * SECOND, 'third: 2 s');
  t.equal(restartDelayMs(0, history(5, 5, 5, 5)), 4 * SECOND, 'fourth: 4 s');
  t.equal(restartDelayMs(0, history(5, 5, 5, 5, 5)), 8 * SECOND, 'fifth: 8 s');
  t.equal(restartDelayMs(10, history(5, 5)), 10 * SECOND, '--restart-delay 10, second restart: 10 s');
  t.equal(restartDelayMs(10, history(5, 5, 5)), 20 * SECOND, '--restart-delay 10, third: 20 s');
  t.equal(restartDelayMs(0.5, history(5, 5, 5)), 2 * SECOND, 'a delay under 1 s backs off from 1 s');
  t.equal(restartDelayMs(0, history(5, MINUTE - 1)), 1 * SECOND, 'an attempt of 59.999 s is quick');
});

t.test('restartDelayMs: the backoff is capped at max(delay, 300 s)', async (t) => {
  t.equal(MAX_BACKOFF_MS, 300 * SECOND);
  const quick = (n: number) => history(...Array.from({ length: n }, () => 5));
  t.equal(restartDelayMs(0, quick(10)), 256 * SECOND, '2^8 s is under the cap');
  t.equal(restartDelayMs(0, quick(11)), 300 * SECOND, '2^9 s is capped at 300 s');
  t.equal(restartDelayMs(0, quick(60)), 300 * SECOND, 'and stays there, without overflow');
  t.equal(restartDelayMs(400, quick(1)), 400 * SECOND, 'a delay above the cap: the first restart waits it');
  t.equal(restartDelayMs(400, quick(5)), 400 * SECOND, 'and quick ones never wait longer than it');
});

t.test('restartDelayMs: an attempt that ran a minute or more resets the backoff', async (t) => {
  t.equal(restartDelayMs(0, history(5, 5, 5, MINUTE)), 0, 'the attempt that just ended ran 60 s: back to the delay');
  t.equal(restartDelayMs(3, history(5, 5, 5, 2 * MINUTE)), 3 * SECOND, 'back to --restart-delay 3');
  t.equal(
    restartDelayMs(0, history(5, 5, 5, MINUTE, 5)),
    1 * SECOND,
    'quick ones after a long one count again from 1 s',
  );
  t.equal(restartDelayMs(0, history(5, 5, 5, MINUTE, 5, 5)), 2 * SECOND, 'then 2 s');
});

const submit = (extra: Partial<JobSubmit>): JobSubmit => ({ command: ['true'], ...extra });
const job = (extra: Partial<JobSubmit>, attempt = 0) => ({ submit: submit(extra), attempt });

t.test('restarts: only failures --restart-on names, while the budget lasts', async (t) => {
  const cases: Array<[string, Partial<JobSubmit>, number, JobState, number, boolean]> = [
    ['no --max-restarts: never', {}, 0, 'failed', 1, false],
    ['a failure with budget left', { maxRestarts: 2 }, 0, 'failed', 1, true],
    ['a lost node with budget left', { maxRestarts: 2 }, 1, 'lost', 1, true],
    ['the budget spent (attempt 2 of --max-restarts 2)', { maxRestarts: 2 }, 2, 'failed', 1, false],
    ['success never restarts', { maxRestarts: 2 }, 0, 'succeeded', 0, false],
    ['cancel never restarts', { maxRestarts: 2 }, 0, 'cancelled', 143, false],
    ['a timeout never restarts', { maxRestarts: 2 }, 0, 'timed-out', 143, false],
    ['--restart-on node-lost: a lost node restarts', { maxRestarts: 2, restartOn: 'node-lost' }, 0, 'lost', 1, true],
    ['--restart-on node-lost: a failure ends', { maxRestarts: 2, restartOn: 'node-lost' }, 0, 'failed', 1, false],
    ['--restart-on 3: exit 3 restarts', { maxRestarts: 2, restartOn: [3] }, 0, 'failed', 3, true],
    ['--restart-on 3: exit 4 ends', { maxRestarts: 2, restartOn: [3] }, 0, 'failed', 4, false],
    ['--restart-on 3,137: SIGKILL (137) restarts', { maxRestarts: 2, restartOn: [3, 137] }, 0, 'failed', 137, true],
    ['--restart-on 3: budget spent', { maxRestarts: 1, restartOn: [3] }, 1, 'failed', 3, false],
  ];
  for (const [name, extra, attempt, state, code, expected] of cases) {
    t.equal(restarts(job(extra, attempt), state, code), expected, name);
  }
});

const failure = (extra: Partial<AttemptFailure>): AttemptFailure => ({
  rank: 5,
  node: 'c',
  state: 'exited',
  exitCode: 1,
  signal: null,
  reason: 'rank 5 on c exited with code 1',
  lastLines: [],
  ...extra,
});

t.test('failedNodes: lost nodes, and the first failure node when a hardware-like signal killed it', async (t) => {
  t.same(failedNodes(new Set(), null), [], 'no failure, no loss: nothing');
  t.same(failedNodes(new Set(), failure({})), [], 'a rank that exited 1 leaves its node in');
  t.same(failedNodes(new Set(['b']), failure({})), ['b'], 'a lost node is left out');
  t.same(failedNodes(new Set(), failure({ exitCode: null, signal: 'SIGSEGV' })), ['c'], 'SIGSEGV: its node');
  t.same(failedNodes(new Set(), failure({ exitCode: null, signal: 'SIGBUS' })), ['c'], 'SIGBUS: its node');
  t.same(failedNodes(new Set(), failure({ exitCode: null, signal: 'SIGTERM' })), [], 'SIGTERM: not its node');
  t.same(failedNodes(new Set(), failure({ exitCode: null, signal: 'SIGKILL' })), [], 'SIGKILL: not its node');
  t.same(
    failedNodes(new Set(['c', 'd']), failure({ signal: 'SIGBUS' })),
    ['c', 'd'],
    'a node both lost and faulted is named once',
  );
});

t.test('describeFailure: the failure, and its last line quoted', async (t) => {
  t.equal(describeFailure(failure({})), 'rank 5 on c exited with code 1', 'no stderr: the reason alone');
  t.equal(
    describeFailure(failure({ lastLines: ['Traceback', 'RuntimeError: CUDA error: an illegal memory access'] })),
    'rank 5 on c exited with code 1 (last line: "RuntimeError: CUDA error: an illegal memory access")',
    'the last of the lines, quoted',
  );
  t.equal(
    describeFailure(failure({ lastLines: ['say "hi"\\'] })),
    'rank 5 on c exited with code 1 (last line: "say \\"hi\\"\\\\")',
    'quotes and backslashes in the line are escaped',
  );
});

t.test('restartLabel: the attempt about to start, among the restarts the job may take', async (t) => {
  t.equal(restartLabel(job({ maxRestarts: 3 }, 2)), 'restart 2/3');
  t.equal(restartLabel(job({}, 0)), 'restart 0/0');
});
