// The job manager with gang restarts, in process: the real manager, scheduler, lifecycle,
// node registry and store (SQLite in a temporary directory) over 4-core nodes whose facts
// the real reader takes from generated sysfs trees. The agents are fakes that record what
// they are sent (the test plays their reports through the lifecycle), and time is a fake
// clock that the manager and its scheduler both read, so --restart-delay is driven, not
// waited for. A "controller restart" is a second manager over the same SQLite file.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import pino from 'pino';
import type { ControllerMessage, JobSubmit, JobView, PlacementSpec } from '@rankd/protocol';
import type { PlannerNode } from '@rankd/planner';
import { JobManager } from '#controller/jobs/job-manager';
import { JobsRepo } from '#controller/jobs/jobs-repo';
import { LogStore } from '#controller/jobs/log-store';
import { NodeRegistry, type AgentLink } from '#controller/nodes/node-registry';
import { defaultFleetTiming } from '#controller/nodes/timing';
import { OpenMpiMode } from '#controller/openmpi/openmpi-mode';
import { openDatabase } from '#controller/store/database';
import { EventsRepo } from '#controller/store/events-repo';
import { NodesRepo } from '#controller/store/nodes-repo';
import { FakeClock } from '../helpers/fake-clock.js';
import { cluster } from '../planner/cluster.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const log = pino({ level: 'silent' });
let machines: PlannerNode[] | null = null;

/** Four 4-core nodes n1…n4, read from generated sysfs trees (once per file). */
function fourNodes(dir: string): PlannerNode[] {
  const machine = (name: string) => ({ packages: 1, coresPerPackage: 4, threadsPerCore: 1, host: { hostname: name } });
  return (machines ??= cluster(
    dir,
    ['n1', 'n2', 'n3', 'n4'].map((name) => ({ name, address: null, machine: machine(name) })),
  ));
}

/** The passes the scheduler coalesces onto the next tick have run. */
const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** A controller's job side over `dir`: a fresh one, or one that restarts over the same file. */
class Controller {
  readonly repo: JobsRepo;
  readonly events: EventsRepo;
  readonly logs: LogStore;
  readonly registry: NodeRegistry;
  readonly manager: JobManager;
  /** What agents were sent: `node type id`. */
  readonly sent: string[] = [];

  constructor(
    t: Test,
    readonly dir: string,
    readonly clock: FakeClock,
    nodes: readonly string[],
  ) {
    const db = openDatabase(dir);
    t.teardown(() => db.close());
    this.repo = new JobsRepo(db);
    this.events = new EventsRepo(db);
    this.logs = new LogStore(join(dir, 'logs'));
    t.teardown(() => this.logs.closeAll());
    this.registry = new NodeRegistry(new NodesRepo(db), this.events, defaultFleetTiming, log, () => clock.now());
    this.registry.load();
    const agents = { send: (node: string, m: ControllerMessage) => this.record(node, m) };
    const connected = (node: string) => Boolean(this.registry.link(node));
    const openmpi = new OpenMpiMode(agents, this.events, connected);
    this.manager = new JobManager(
      this.repo,
      this.events,
      this.logs,
      this.registry,
      agents,
      openmpi,
      log,
      undefined,
      {},
      'share',
      clock,
    );
    const facts = fourNodes(join(t.testdirName, 'sysfs'));
    for (const name of nodes) {
      const link: AgentLink = {
        remoteAddress: null,
        send: (m) => this.record(name, m),
        sendEncoded: () => true,
        close: () => {},
      };
      const hello = { type: 'hello' as const, name, version: 'test', capabilities: [], labels: {} };
      this.registry.register({ ...hello, facts: facts.find((n) => n.name === name)!.facts }, link, name);
    }
  }

  private record(node: string, m: ControllerMessage): boolean {
    this.sent.push(`${node} ${m.type} ${'jobId' in m ? m.jobId : ''}`);
    return true;
  }

  submit(placement: PlacementSpec, extra: Partial<JobSubmit> = {}): string {
    return this.manager.submit({ command: ['train.py'], placement, ...extra }).view.id;
  }

  view(id: string): JobView {
    return this.manager.view(id)!;
  }

  /** The job's current attempt starts on every node it was planned on. */
  started(id: string): void {
    const live = this.manager.lifecycle.get(id)!;
    const binding = { cpus: [0], memNodes: [0], verified: true };
    for (const r of live.ranks) {
      const start = { pid: 100 + r.rank, startedAt: this.clock.now(), binding, warnings: [] };
      this.manager.lifecycle.rankStarted(live.attemptId, r.rank, r.node, start);
    }
  }

  /** `rank` exits with `code` (or `signal`); every other rank then ends by SIGTERM, as fail-fast asks. */
  fails(id: string, rank: number, code: number | null, signal: string | null = null): void {
    const live = this.manager.lifecycle.get(id)!;
    const exit = (c: number | null, s: string | null) => ({
      code: c,
      signal: s,
      endedAt: this.clock.now(),
      outputBytes: { stdout: 0, stderr: 0 },
    });
    const { attemptId } = live;
    this.manager.lifecycle.exitReported(attemptId, rank, exit(code, signal));
    for (const r of [...live.ranks]) {
      if (r.rank !== rank) this.manager.lifecycle.exitReported(attemptId, r.rank, exit(null, 'SIGTERM'));
    }
  }

  /** The nodes of the job's current rank map. */
  nodesOf(id: string): string[] {
    return this.view(id).rankMap?.nodes.map((n) => n.name) ?? [];
  }

  /** The history's events of `kind` about job `id`, with their attempt. */
  history(kind: string, id: string): unknown[] {
    return this.events
      .list(0, 10_000)
      .filter((e) => e.kind === kind && e.subject === id)
      .map((e) => e.data['attempt']);
  }
}

function world(t: Test, nodes = ['n1', 'n2', 'n3']): Controller {
  return new Controller(t, t.testdir(), new FakeClock(T0), nodes);
}

const twoWholeNodes: PlacementSpec = { ntasks: 2, nodes: 2, cpusPerRank: 4 };

t.test('a restarting job keeps its place in the queue, ahead of jobs submitted after it', async (t) => {
  const c = world(t, ['n1', 'n2']);
  const a = c.submit(twoWholeNodes, { maxRestarts: 2 });
  c.clock.advance(1_000);
  const b = c.submit(twoWholeNodes);
  t.equal(c.view(a).state, 'starting', 'a starts');
  t.equal(c.view(b).state, 'queued', 'b, submitted after it, waits');
  c.started(a);
  c.fails(a, 1, 3);
  t.same(
    c.manager.queue().map((q) => [q.job.id, q.position]),
    [
      [a, 1],
      [b, 2],
    ],
    'a is back in the queue first: its submission time is its place',
  );
  t.match(c.view(a), { state: 'queued', attempt: 1, reason: 'restart 1/2: after rank 1 on n2 exited with code 3' });
  await settle();
  t.match(c.view(a), { state: 'starting', attempt: 1 }, 'a starts again, before b');
  t.same(c.nodesOf(a), ['n1', 'n2']);
  t.equal(c.view(b).state, 'queued', 'b still waits');
  t.same(c.history('job.allocated', a), [0, 1], 'a was allocated once per attempt');
  t.same(c.history('job.allocated', b), [], 'b never was');
});

t.test('--restart-delay holds the next attempt until it is over, and its timer wakes the scheduler', async (t) => {
  const c = world(t);
  const a = c.submit(twoWholeNodes, { maxRestarts: 2, restartDelay: 30 });
  c.started(a);
  c.clock.advance(5_000);
  c.fails(a, 0, 1);
  const due = new Date(T0 + 35_000).toISOString();
  await settle();
  t.match(c.view(a), { state: 'queued', attempt: 1, reason: `restart 1/2: next attempt at ${due} (--restart-delay)` });
  c.clock.advance(29_999);
  await settle();
  t.equal(c.view(a).state, 'queued', 'not a millisecond before the delay is over');
  const before = c.sent.length;
  c.clock.advance(1);
  await settle();
  t.match(c.view(a), { state: 'starting', attempt: 1 }, 'then it starts, with nothing else to wake the scheduler');
  t.same(c.sent.slice(before), [`n1 job.start ${a}-1`, `n2 job.start ${a}-1`], 'attempt 1, by its own id');
});

t.test('a wall clock stepped back during the delay: the timer waits again instead of never', async (t) => {
  const c = world(t);
  const a = c.submit(twoWholeNodes, { maxRestarts: 2, restartDelay: 30 });
  c.started(a);
  c.fails(a, 0, 1);
  await settle();
  // timers run on a monotonic clock: after a 10 s step back they fire 10 s before the wall time they were set for
  c.clock.stepBack(10_000);
  c.clock.advance(30_000);
  await settle();
  t.equal(c.view(a).state, 'queued', 'the wall clock says the delay is not over yet');
  c.clock.advance(10_000);
  await settle();
  t.match(c.view(a), { state: 'starting', attempt: 1 }, 'it starts once it is');
});

t.test('cancel during the restart delay ends the job, and nothing starts after', async (t) => {
  const c = world(t);
  const a = c.submit(twoWholeNodes, { maxRestarts: 2, restartDelay: 30 });
  c.started(a);
  c.fails(a, 1, 3);
  await settle();
  const view = c.manager.cancel(a);
  t.match(view, {
    state: 'cancelled',
    attempt: 1,
    exitCode: 130,
    reason: 'cancelled by request while waiting for restart 1/2',
  });
  t.equal(c.clock.pending, 0, 'the restart timer is cancelled');
  const before = c.sent.length;
  c.clock.advance(60_000);
  await settle();
  t.same(c.sent.slice(before), [], 'no agent is sent anything');
  t.match(c.view(a), { state: 'cancelled', attempt: 1 });
  t.same(c.history('job.allocated', a), [0], 'attempt 1 was never allocated');
  t.same(
    c.view(a).attempts.map((x) => [x.attempt, x.state]),
    [[0, 'failed']],
    'the attempts: only the one that ran',
  );
  t.same(c.manager.queue(), [], 'the queue is empty');
});

t.test('the next attempt is placed without the nodes that failed, and waits for a replacement', async (t) => {
  const c = world(t);
  const a = c.submit(twoWholeNodes, { maxRestarts: 2 });
  t.same(c.nodesOf(a), ['n1', 'n2']);
  c.started(a);
  c.manager.lifecycle.nodeLost('n2');
  c.fails(a, 0, null, 'SIGTERM');
  await settle();
  t.same(c.nodesOf(a), ['n1', 'n3'], 'attempt 1 runs on n3 instead of n2 (which is still ready)');
  t.same(c.view(a).excluded, ['n2']);
  c.started(a);
  c.fails(a, 1, null, 'SIGSEGV');
  await settle();
  t.match(c.view(a).reason, /^restart 2\/2: next attempt at /, 'a second quick failure backs off 1 s');
  c.clock.advance(1_000);
  await settle();
  t.same(c.view(a).excluded, ['n2', 'n3']);
  t.match(c.view(a), {
    state: 'queued',
    attempt: 2,
    reason: 'restart 2/2: waiting for 1 replacement node with 4 free cores',
  });
  t.same(c.history('job.allocated', a), [0, 1], 'attempt 2 is not allocated');
});

t.test('a --nodelist job whose node failed says so', async (t) => {
  const c = world(t);
  const a = c.submit({ ntasks: 2, nodelist: ['n1', 'n2'], cpusPerRank: 1 }, { maxRestarts: 2 });
  c.started(a);
  c.manager.lifecycle.nodeLost('n1');
  c.fails(a, 1, null, 'SIGTERM');
  await settle();
  t.match(c.view(a), {
    state: 'queued',
    attempt: 1,
    reason: 'restart 1/2: n1 failed an earlier attempt and is left out',
  });
});

t.test(
  'a controller restart during the delay re-arms the timer with the time left; attempt 1 starts once',
  async (t) => {
    const first = world(t);
    const a = first.submit(twoWholeNodes, { maxRestarts: 2, restartDelay: 30 });
    first.started(a);
    first.fails(a, 0, 1);
    await settle();
    first.clock.advance(10_000);
    // the first controller is gone: its clock never moves again, so nothing of it fires
    const clock = new FakeClock(first.clock.now());
    const second = new Controller(t, first.dir, clock, ['n1', 'n2', 'n3']);
    second.manager.restore();
    await settle();
    t.match(second.view(a), { state: 'queued', attempt: 1 }, 'restored queued, for attempt 1');
    t.match(second.view(a).reason, /^restart 1\/2: next attempt at /);
    clock.advance(19_999);
    await settle();
    t.equal(second.view(a).state, 'queued', 'the 20 s left are waited, no less');
    clock.advance(1);
    await settle();
    t.match(second.view(a), { state: 'starting', attempt: 1 }, 'then attempt 1 starts');
    clock.advance(600_000);
    await settle();
    t.same(second.history('job.allocated', a), [0, 1], 'each attempt allocated exactly once');
    t.same(
      second.view(a).attempts.map((x) => [x.attempt, x.state]),
      [
        [0, 'failed'],
        [1, 'running'],
      ],
    );
    t.same(
      [...first.sent, ...second.sent].filter((s) => s.includes('job.start')),
      [`n1 job.start ${a}`, `n2 job.start ${a}`, `n1 job.start ${a}-1`, `n2 job.start ${a}-1`],
      'the agents were told to start each attempt once',
    );
  },
);

t.test('a controller restart while attempt 1 runs: it is adopted as attempt 1, and its end is the job', async (t) => {
  const first = world(t);
  const a = first.submit(twoWholeNodes, { maxRestarts: 1 });
  first.started(a);
  first.fails(a, 0, 1);
  await settle();
  first.started(a);
  const second = new Controller(t, first.dir, new FakeClock(first.clock.now()), ['n1', 'n2', 'n3']);
  second.manager.restore();
  const live = second.manager.lifecycle.get(a)!;
  t.equal(live.attemptId, `${a}-1`, 'the agents know it by the id of attempt 1');
  t.same(
    live.ranks.map((r) => [r.attempt, r.state]),
    [
      [1, 'running'],
      [1, 'running'],
    ],
  );
  second.fails(a, 1, 7);
  t.match(second.view(a), { state: 'failed', attempt: 1, exitCode: 7, reason: 'rank 1 on n2 exited with code 7' });
  t.same(
    second.view(a).attempts.map((x) => [x.attempt, x.state, x.exitCode]),
    [
      [0, 'failed', 1],
      [1, 'failed', 7],
    ],
  );
});

t.test(
  'a controller restart while a cancelled attempt is being stopped: the job ends cancelled, no restart',
  async (t) => {
    const first = world(t);
    const a = first.submit(twoWholeNodes, { maxRestarts: 2 });
    first.started(a);
    first.manager.cancel(a);
    const second = new Controller(t, first.dir, new FakeClock(first.clock.now()), ['n1', 'n2', 'n3']);
    second.manager.restore();
    t.equal(second.manager.lifecycle.get(a)!.stopping?.state, 'cancelled', 'it is still being stopped for the cancel');
    second.fails(a, 0, null, 'SIGTERM');
    await settle();
    t.match(second.view(a), { state: 'cancelled', attempt: 0, reason: 'cancelled by request' });
    t.same(second.history('job.allocated', a), [0], 'no attempt followed');
  },
);

t.test('a controller restart while a failed attempt is being stopped: its first failure is kept', async (t) => {
  const first = world(t);
  const a = first.submit(twoWholeNodes, { maxRestarts: 2 });
  first.started(a);
  const live = first.manager.lifecycle.get(a)!;
  const exit = { code: 3, signal: null, endedAt: first.clock.now(), outputBytes: { stdout: 0, stderr: 0 } };
  first.manager.lifecycle.exitReported(live.attemptId, 1, exit);
  t.equal(live.stopping?.state, 'failed', 'rank 1 failed it: rank 0 is being stopped');
  // n1 does not come back to the new controller: rank 0's end is never known
  const second = new Controller(t, first.dir, new FakeClock(first.clock.now()), ['n2', 'n3', 'n4']);
  second.manager.restore();
  second.manager.lifecycle.nodeLost('n1');
  await settle();
  t.match(second.view(a), { attempt: 1 }, 'the attempt ended with the loss of n1: attempt 1');
  t.match(second.view(a).attempts[0], {
    state: 'failed',
    exitCode: 3,
    reason: 'rank 1 on n2 exited with code 3',
    firstFailure: { rank: 1, node: 'n2', exitCode: 3 },
    excluded: ['n1'],
  });
  t.same(second.view(a).excluded, ['n1'], 'n1, lost during the stop, is left out');
  t.same(second.nodesOf(a), ['n2', 'n3']);
});

t.test('each attempt gets a fresh rendezvous port; a job cancelled during the delay holds none', async (t) => {
  const c = world(t);
  const a = c.submit(twoWholeNodes, { maxRestarts: 2, restartDelay: 30 });
  const port = (id: string) => c.view(id).rankMap!.masterPort;
  t.equal(port(a), 29500);
  c.started(a);
  c.fails(a, 1, 3);
  c.clock.advance(30_000);
  await settle();
  t.same(c.nodesOf(a), ['n1', 'n2'], 'attempt 1 has rank 0 on the same node');
  t.equal(port(a), 29501, "not attempt 0's port, where a rank of it may still listen");
  c.started(a);
  c.fails(a, 1, 3);
  await settle();
  c.manager.cancel(a);
  const b = c.submit(twoWholeNodes);
  t.equal(port(b), 29500, 'once the job is cancelled, no port stays held for it');
});
