// Gang restarts in the job lifecycle (rankd run --max-restarts): a failed attempt's ranks
// all end, and then the job either ends or goes back to the queue for its next attempt,
// without the nodes that failed it. Each row is a job on three 4-core nodes (n1, n2, n3;
// rank maps from the real planner) and the events of its first attempt as agents and the
// fleet deliver them; the row says whether it restarts, what attempt 0's record holds and
// which nodes are left out. The real lifecycle, MPI strategies, store (SQLite in a
// temporary directory) and log store run; only the clock and the agents' links are fakes.
// The tests after the table follow a job across attempts.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import pino from 'pino';
import type { AttemptFailure, Binding, JobState, JobSubmit, RankLaunch } from '@rankd/protocol';
import type { NodeFailure } from '#controller/jobs/attempts-repo';
import { DirectStart } from '#controller/jobs/direct-start';
import { JobLifecycle } from '#controller/jobs/job-lifecycle';
import type { JobRecord } from '#controller/jobs/job-records';
import { JobsRepo } from '#controller/jobs/jobs-repo';
import { LogStore } from '#controller/jobs/log-store';
import { MasterPorts } from '#controller/jobs/master-ports';
import { OpenMpiMode } from '#controller/openmpi/openmpi-mode';
import { planRankMap, type PlannerNode } from '@rankd/planner';
import { openDatabase } from '#controller/store/database';
import { EventsRepo } from '#controller/store/events-repo';
import { FakeClock } from '../helpers/fake-clock.js';
import { cluster } from '../planner/cluster.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const NODES = ['n1', 'n2', 'n3'];
let planner: PlannerNode[] | null = null;

/** Three 4-core nodes read from generated sysfs trees (once per file). */
function plannerNodes(dir: string): PlannerNode[] {
  const machine = (name: string) => ({ packages: 1, coresPerPackage: 4, threadsPerCore: 1, host: { hostname: name } });
  return (planner ??= cluster(
    dir,
    NODES.map((name) => ({ name, address: null, machine: machine(name) })),
  ));
}

/** A message an agent was sent, as `node type id`, and the launches of a start. */
interface Sent {
  line: string;
  launches: RankLaunch[];
}

/** One job's world: the real lifecycle on a real store, with a fake clock and fake agents. */
class World {
  readonly repo: JobsRepo;
  readonly events: EventsRepo;
  readonly logs: LogStore;
  readonly clock = new FakeClock(T0);
  readonly sent: Sent[] = [];
  readonly connected = new Set(NODES);
  readonly told = {
    ended: [] as JobState[],
    restarting: [] as number[],
    attemptEnded: [] as string[],
    released: 0,
    nodesFailed: [] as NodeFailure[],
  };
  readonly lifecycle: JobLifecycle;
  readonly job: JobRecord;
  private readonly nodes: PlannerNode[];

  constructor(t: Test, submit: Partial<JobSubmit>) {
    const dir = t.testdir();
    this.nodes = plannerNodes(join(dir, 'sysfs'));
    const db = openDatabase(dir);
    t.teardown(() => db.close());
    this.repo = new JobsRepo(db);
    this.events = new EventsRepo(db);
    this.logs = new LogStore(join(dir, 'logs'));
    t.teardown(() => this.logs.closeAll());
    const agents = { send: (node: string, m: { type: string } & Record<string, unknown>) => this.send(node, m) };
    const connected = (node: string) => this.connected.has(node);
    const { told } = this;
    this.lifecycle = new JobLifecycle({
      repo: this.repo,
      events: this.events,
      logs: this.logs,
      agents,
      connected,
      leaseMs: () => 30_000,
      ports: new MasterPorts(),
      modes: {
        pmi1: new DirectStart(agents, true),
        none: new DirectStart(agents, false),
        openmpi: new OpenMpiMode(agents, this.events, connected),
      },
      clock: this.clock,
      log: pino({ level: 'silent' }),
      hooks: {
        changed: () => {},
        ended: (_id, state) => told.ended.push(state),
        released: () => told.released++,
        attemptEnded: (id) => told.attemptEnded.push(id),
        restarting: (job) => told.restarting.push(job.attempt),
        nodesFailed: (failures) => told.nodesFailed.push(...failures),
      },
    });
    this.job = queuedJob(submit);
    this.repo.create(this.job);
  }

  private send(node: string, m: { type: string } & Record<string, unknown>): boolean {
    if (!this.connected.has(node)) return false;
    const launches = (m['ranks'] as RankLaunch[] | undefined) ?? [];
    this.sent.push({ line: `${node} ${m.type} ${String(m['jobId'])}`, launches });
    return true;
  }

  /** What the scheduler does when the job fits: its next attempt is planned on `nodes`, one rank each. */
  begin(nodes: string[]): void {
    const on = nodes.map((name) => this.nodes.find((n) => n.name === name)!);
    const spec = { ntasks: nodes.length, nodes: nodes.length, cpusPerRank: 1 };
    this.lifecycle.begin(this.job, planRankMap(on, spec, { pickPort: () => 29500 }), { mode: 'normal', nodes: {} });
  }

  /** The id the agents know the live attempt by. */
  get attemptId(): string {
    return this.lifecycle.get(this.job.id)!.attemptId;
  }

  nodeOf(rank: number): string {
    return this.lifecycle.get(this.job.id)!.ranks[rank]!.node;
  }

  started(...ranks: number[]): void {
    const binding: Binding = { cpus: [0], memNodes: [0], verified: true };
    for (const rank of ranks) {
      const start = { pid: 1000 + rank, startedAt: this.clock.now(), binding, warnings: [] };
      this.lifecycle.rankStarted(this.attemptId, rank, this.nodeOf(rank), start);
    }
  }

  /** The rank writes `text` to its stderr, and the controller stores it. */
  stderr(rank: number, text: string): void {
    const id = this.attemptId;
    const size = this.logs.size(id, rank, 'stderr');
    this.logs.append(id, rank, 'stderr', size, Buffer.from(text));
    this.lifecycle.outputStored(id, rank, 'stderr', this.logs.size(id, rank, 'stderr'));
  }

  /** The agent reports the rank's exit, after every byte it wrote. */
  exit(rank: number, code: number | null, signal: string | null = null): void {
    const id = this.attemptId;
    const outputBytes = { stdout: 0, stderr: this.logs.size(id, rank, 'stderr') };
    const exit = { code, signal, endedAt: this.clock.now(), outputBytes };
    this.lifecycle.exitReported(id, rank, exit);
  }

  /** Stopped ranks end by SIGTERM, in rank order. */
  killed(...ranks: number[]): void {
    for (const rank of ranks) this.exit(rank, null, 'SIGTERM');
  }

  stored(): JobRecord {
    return this.repo.get(this.job.id)!;
  }

  /** The messages sent since `from`, as lines. */
  lines(from = 0): string[] {
    return this.sent.slice(from).map((s) => s.line);
  }
}

function queuedJob(submit: Partial<JobSubmit>): JobRecord {
  return {
    id: 'j1',
    name: null,
    idempotencyKey: null,
    owner: null,
    state: 'queued',
    reason: 'submitted',
    submit: { command: ['train.py'], ...submit },
    rankMap: null,
    priority: 0,
    demand: null,
    allocation: null,
    exitCode: null,
    createdAt: T0,
    startedAt: null,
    endedAt: null,
    attempt: 0,
    excluded: [],
    restartAt: null,
  };
}

interface Row {
  name: string;
  submit: Partial<JobSubmit>;
  /** Attempt 0 on n1, n2 (rank 0, rank 1), both started; the row plays the rest. */
  play: (w: World) => void;
  /** Whether the job goes back to the queue for attempt 1 (else it ends). */
  restarts: boolean;
  /** How attempt 0 ended, as its record has it. */
  attempt: { state: JobState; reason: string; exitCode: number };
  failure: Partial<AttemptFailure> | null;
  excluded: string[];
  /** What the agents were sent after the starts. */
  sent: string[];
}

const rows: Row[] = [
  {
    name: 'a failed rank with budget left: the job is queued for attempt 1, no node left out',
    submit: { maxRestarts: 2 },
    play: (w) => {
      w.stderr(1, 'epoch 3\nRuntimeError: CUDA error: out of memory\n');
      w.exit(1, 3);
      w.killed(0);
    },
    restarts: true,
    attempt: { state: 'failed', reason: 'rank 1 on n2 exited with code 3', exitCode: 3 },
    failure: {
      rank: 1,
      node: 'n2',
      state: 'exited',
      exitCode: 3,
      signal: null,
      lastLines: ['epoch 3', 'RuntimeError: CUDA error: out of memory'],
    },
    excluded: [],
    sent: ['n1 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: 'a node lost: it is left out, and keeps its spool',
    submit: { maxRestarts: 2 },
    play: (w) => {
      w.lifecycle.nodeLost('n2');
      w.killed(0);
    },
    restarts: true,
    attempt: { state: 'lost', reason: 'node n2 lost', exitCode: 1 },
    failure: { rank: 1, node: 'n2', state: 'unknown', exitCode: null, signal: null, lastLines: [] },
    excluded: ['n2'],
    sent: ['n1 job.abort j1', 'n2 job.abort j1', 'n1 job.release j1'],
  },
  {
    name: 'SIGSEGV first: its node is left out',
    submit: { maxRestarts: 2 },
    play: (w) => {
      w.exit(1, null, 'SIGSEGV');
      w.killed(0);
    },
    restarts: true,
    attempt: { state: 'failed', reason: 'rank 1 on n2 was killed by SIGSEGV', exitCode: 139 },
    failure: { rank: 1, node: 'n2', signal: 'SIGSEGV' },
    excluded: ['n2'],
    sent: ['n1 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: 'SIGBUS first: its node is left out',
    submit: { maxRestarts: 2 },
    play: (w) => {
      w.exit(0, null, 'SIGBUS');
      w.killed(1);
    },
    restarts: true,
    attempt: { state: 'failed', reason: 'rank 0 on n1 was killed by SIGBUS', exitCode: 135 },
    failure: { rank: 0, node: 'n1', signal: 'SIGBUS' },
    excluded: ['n1'],
    sent: ['n2 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: "a SIGSEGV while the attempt is stopped is not its first failure: that rank's node stays in",
    submit: { maxRestarts: 2 },
    play: (w) => {
      w.exit(0, 1);
      w.exit(1, null, 'SIGSEGV');
    },
    restarts: true,
    attempt: { state: 'failed', reason: 'rank 0 on n1 exited with code 1', exitCode: 1 },
    failure: { rank: 0, node: 'n1', signal: null, exitCode: 1 },
    excluded: [],
    sent: ['n2 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: 'a rank killed by SIGTERM first (not by rankd): the job restarts, its node stays in',
    submit: { maxRestarts: 2 },
    play: (w) => {
      w.exit(1, null, 'SIGTERM');
      w.killed(0);
    },
    restarts: true,
    attempt: { state: 'failed', reason: 'rank 1 on n2 was killed by SIGTERM', exitCode: 143 },
    failure: { rank: 1, node: 'n2', signal: 'SIGTERM' },
    excluded: [],
    sent: ['n1 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: '--restart-on node-lost: a plain failure ends the job',
    submit: { maxRestarts: 2, restartOn: 'node-lost' },
    play: (w) => {
      w.exit(1, 1);
      w.killed(0);
    },
    restarts: false,
    attempt: { state: 'failed', reason: 'rank 1 on n2 exited with code 1', exitCode: 1 },
    failure: { rank: 1, node: 'n2', exitCode: 1 },
    excluded: [],
    sent: ['n1 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: '--restart-on node-lost: a lost node restarts the job',
    submit: { maxRestarts: 2, restartOn: 'node-lost' },
    play: (w) => {
      w.lifecycle.nodeLost('n1');
      w.killed(1);
    },
    restarts: true,
    attempt: { state: 'lost', reason: 'node n1 lost', exitCode: 1 },
    failure: { rank: 0, node: 'n1', state: 'unknown' },
    excluded: ['n1'],
    sent: ['n1 job.abort j1', 'n2 job.abort j1', 'n2 job.release j1'],
  },
  {
    name: '--restart-on 3: exit 3 restarts',
    submit: { maxRestarts: 2, restartOn: [3] },
    play: (w) => {
      w.exit(1, 3);
      w.killed(0);
    },
    restarts: true,
    attempt: { state: 'failed', reason: 'rank 1 on n2 exited with code 3', exitCode: 3 },
    failure: { rank: 1, exitCode: 3 },
    excluded: [],
    sent: ['n1 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: '--restart-on 3: exit 4 ends the job',
    submit: { maxRestarts: 2, restartOn: [3] },
    play: (w) => {
      w.exit(1, 4);
      w.killed(0);
    },
    restarts: false,
    attempt: { state: 'failed', reason: 'rank 1 on n2 exited with code 4', exitCode: 4 },
    failure: { rank: 1, exitCode: 4 },
    excluded: [],
    sent: ['n1 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: 'cancel never restarts',
    submit: { maxRestarts: 2 },
    play: (w) => {
      w.lifecycle.stop('j1', 'cancelled', 'cancelled by request');
      w.killed(0, 1);
    },
    restarts: false,
    attempt: { state: 'cancelled', reason: 'cancelled by request', exitCode: 143 },
    failure: null,
    excluded: [],
    sent: ['n1 job.abort j1', 'n2 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: 'a timeout never restarts',
    submit: { maxRestarts: 2, timeout: 60 },
    play: (w) => {
      w.clock.advance(60_000);
      w.killed(0, 1);
    },
    restarts: false,
    attempt: { state: 'timed-out', reason: 'timed out after 60 s', exitCode: 143 },
    failure: null,
    excluded: [],
    sent: ['n1 job.abort j1', 'n2 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: 'cancel while a failed attempt is being stopped: the job ends cancelled and does not restart',
    submit: { maxRestarts: 2 },
    play: (w) => {
      w.exit(1, 3);
      w.lifecycle.stop('j1', 'cancelled', 'cancelled by request');
      w.killed(0);
    },
    restarts: false,
    attempt: { state: 'cancelled', reason: 'cancelled by request', exitCode: 3 },
    failure: { rank: 1, node: 'n2', exitCode: 3 },
    excluded: [],
    sent: ['n1 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
  {
    name: 'a failure after the --timeout is spent (its timer fired while the attempt was stopping): no restart',
    submit: { maxRestarts: 2, timeout: 60 },
    play: (w) => {
      w.clock.advance(58_000);
      w.exit(1, 3);
      w.clock.advance(5_000);
      w.killed(0);
    },
    restarts: false,
    attempt: { state: 'failed', reason: 'rank 1 on n2 exited with code 3', exitCode: 3 },
    failure: { rank: 1, exitCode: 3 },
    excluded: [],
    sent: ['n1 job.abort j1', 'n1 job.release j1', 'n2 job.release j1'],
  },
];

for (const row of rows) {
  t.test(row.name, (t) => {
    const w = new World(t, row.submit);
    w.begin(['n1', 'n2']);
    w.started(0, 1);
    t.same(w.lines(), ['n1 job.start j1', 'n2 job.start j1'], 'attempt 0 starts as the job itself');
    w.clock.advance(1_000);
    row.play(w);

    const job = w.stored();
    t.notOk(w.lifecycle.has('j1'), 'the attempt is no longer live');
    t.same(w.told.attemptEnded, ['j1'], 'attempt 0 ended once');
    t.equal(w.told.released, 1, 'what it held was freed once');
    t.same(w.lines(2), row.sent, 'the agents were told to stop and drop attempt 0, by its id');
    const [a0, ...more] = w.repo.attempts.list('j1');
    t.same(more, [], 'one attempt recorded');
    t.match(a0, { attempt: 0, nodes: ['n1', 'n2'], startedAt: T0, endedAt: w.clock.now(), ...row.attempt });
    t.same(a0!.excluded, row.excluded, 'the nodes its failure left out, as recorded');
    if (row.failure === null) t.equal(a0!.firstFailure, null, 'no rank failed it');
    else t.match(a0!.firstFailure, row.failure, 'its first failure');
    const failed = w.told.nodesFailed.map((f) => f.node);
    t.same(failed, row.excluded, 'the manager heard of the nodes that failed it');
    t.same(
      w.repo.attempts
        .failuresSince('n1', 0)
        .concat(w.repo.attempts.failuresSince('n2', 0))
        .map((f) => f.node),
      row.excluded,
      'and they are stored for --exclude-after',
    );
    if (row.restarts) {
      t.match(job, { state: 'queued', attempt: 1, rankMap: null, allocation: null, exitCode: null });
      t.equal(job.reason, `restart 1/2: after ${row.attempt.reason}`);
      t.equal(job.restartAt, w.clock.now(), 'no --restart-delay: due at once');
      t.same(job.excluded, row.excluded, 'the job leaves them out of its next attempts');
      t.same(w.told, { ...w.told, ended: [], restarting: [1] }, 'the manager heard of a restart, not an end');
      t.equal(a0!.restartDelayMs, 0);
    } else {
      t.match(job, { state: row.attempt.state, attempt: 0, exitCode: row.attempt.exitCode });
      t.equal(job.reason, row.attempt.reason);
      t.same(w.told, { ...w.told, ended: [row.attempt.state], restarting: [] }, 'the manager heard of an end');
      t.equal(a0!.restartDelayMs, null);
    }
    t.end();
  });
}

t.test('attempt 1 runs under its own id, with its attempt in its ranks env', (t) => {
  const w = new World(t, { maxRestarts: 2 });
  w.begin(['n1', 'n2']);
  w.started(0, 1);
  w.exit(1, null, 'SIGSEGV');
  w.killed(0);
  const before = w.sent.length;
  w.clock.advance(2_000);
  w.begin(['n1', 'n3']);
  t.equal(w.attemptId, 'j1-1');
  t.same(w.lines(before), ['n1 job.start j1-1', 'n3 job.start j1-1'], "attempt 1's starts carry its own id");
  const env = w.sent[before]!.launches[0]!.env;
  t.match(env, {
    RANKD_JOB_ID: 'j1',
    RANKD_ATTEMPT: '1',
    RANKD_MAX_RESTARTS: '2',
    TORCHELASTIC_RUN_ID: 'j1',
    TORCHELASTIC_RESTART_COUNT: '1',
    TORCHELASTIC_MAX_RESTARTS: '2',
  });
  t.match(w.stored(), { state: 'starting', attempt: 1, restartAt: null, startedAt: T0 }, 'it keeps its first start');
  t.same(w.repo.attempts.list('j1').at(-1), {
    jobId: 'j1',
    attempt: 1,
    state: 'running',
    reason: 'started',
    nodes: ['n1', 'n3'],
    startedAt: T0 + 2_000,
    endedAt: null,
    exitCode: null,
    firstFailure: null,
    excluded: [],
    restartDelayMs: null,
  });

  // late reports of attempt 0, by its id, find no live job and change nothing of attempt 1
  t.equal(w.lifecycle.attempt('j1'), undefined, "attempt 0's id finds nothing");
  const binding = { cpus: [0], memNodes: [0], verified: true };
  w.lifecycle.rankStarted('j1', 0, 'n1', { pid: 1, startedAt: w.clock.now(), binding, warnings: [] });
  const late = { code: 1, signal: null, endedAt: w.clock.now(), outputBytes: { stdout: 0, stderr: 0 } };
  t.notOk(w.lifecycle.exitReported('j1', 0, late), "a late exit of attempt 0's rank 0 is not applied");
  t.equal(w.lifecycle.outputStored('j1', 1, 'stderr', 10), false, 'nor its output');
  t.same(
    w.lifecycle.get('j1')!.ranks.map((r) => r.state),
    ['pending', 'pending'],
    "attempt 1's ranks are untouched",
  );
  // an agent that reconnects holding attempt 0's rank is not holding attempt 1's
  w.lifecycle.nodeReported('n1', new Set(['j1/0']));
  t.same(w.lines(before + 2), ['n1 job.start j1-1'], 'n1 is sent the start of attempt 1 again');

  w.started(0, 1);
  w.exit(0, 0);
  w.exit(1, 0);
  t.match(w.stored(), { state: 'succeeded', attempt: 1, exitCode: 0, reason: 'all 2 ranks exited 0' });
  t.same(w.told.attemptEnded, ['j1', 'j1-1']);
  t.same(w.told.ended, ['succeeded']);
  t.same(
    w.repo.ranks(w.stored(), 0).map((r) => `${r.node} ${r.state} ${r.signal ?? r.exitCode}`),
    ['n1 exited SIGTERM', 'n2 exited SIGSEGV'],
    "attempt 0's ranks are kept, by attempt",
  );
  t.same(
    w.repo.ranks(w.stored()).map((r) => `${r.node} ${r.state} ${r.exitCode}`),
    ['n1 exited 0', 'n3 exited 0'],
    "the job's ranks are its last attempt's",
  );
  t.end();
});

t.test("the budget spent: the job fails with its last attempt's first failure and exit code", (t) => {
  const w = new World(t, { maxRestarts: 1 });
  w.begin(['n1', 'n2']);
  w.started(0, 1);
  w.stderr(1, 'first\n');
  w.exit(1, 3);
  w.killed(0);
  t.match(w.stored(), { state: 'queued', attempt: 1, reason: 'restart 1/1: after rank 1 on n2 exited with code 3' });
  w.begin(['n1', 'n2']);
  w.started(0, 1);
  w.stderr(0, 'Traceback (most recent call last):\nValueError: loss is nan\n');
  w.exit(0, 5);
  w.killed(1);
  t.match(w.stored(), { state: 'failed', attempt: 1, exitCode: 5, reason: 'rank 0 on n1 exited with code 5' });
  const attempts = w.repo.attempts.list('j1');
  t.same(
    attempts.map((a) => [a.attempt, a.state, a.exitCode, a.firstFailure?.rank, a.firstFailure?.lastLines]),
    [
      [0, 'failed', 3, 1, ['first']],
      [1, 'failed', 5, 0, ['Traceback (most recent call last):', 'ValueError: loss is nan']],
    ],
    'each attempt with its own first failure and the stderr of its own attempt',
  );
  t.same(w.told.ended, ['failed']);
  t.same(w.told.restarting, [1]);
  t.end();
});

t.test('excluded nodes add up across attempts, each named once', (t) => {
  const w = new World(t, { maxRestarts: 3 });
  w.begin(['n1', 'n2']);
  w.started(0, 1);
  w.lifecycle.nodeLost('n2');
  w.killed(0);
  t.same(w.stored().excluded, ['n2']);
  w.begin(['n1', 'n3']);
  w.started(0, 1);
  w.exit(1, null, 'SIGBUS');
  w.killed(0);
  t.same(w.stored().excluded, ['n2', 'n3'], 'n2 (lost in attempt 0) and n3 (SIGBUS in attempt 1)');
  w.begin(['n1']);
  w.started(0);
  w.lifecycle.nodeLost('n1');
  t.same(w.stored().excluded, ['n2', 'n3', 'n1'], 'then n1');
  t.same(
    w.repo.attempts.list('j1').map((a) => a.excluded),
    [['n2'], ['n3'], ['n1']],
    'each attempt records what it left out',
  );
  t.end();
});

t.test('the history tells each attempt: allocated and released once, ranks by attempt id', (t) => {
  const w = new World(t, { maxRestarts: 2 });
  w.begin(['n1', 'n2']);
  w.started(0, 1);
  w.exit(1, 2);
  w.killed(0);
  w.begin(['n2', 'n3']);
  w.started(0, 1);
  w.exit(0, 0);
  w.exit(1, 0);
  const history = w.events.list().filter((e) => e.kind !== 'rank.output');
  const line = (e: { kind: string; subject: string; data: Record<string, unknown> }) => {
    const attempt = e.data['attempt'] === undefined ? '' : ` attempt ${String(e.data['attempt'])}`;
    if (e.kind === 'job.state') return `${e.kind} ${e.subject} ${String(e.data['from'])}→${String(e.data['to'])}`;
    if (e.kind === 'rank.exited') return `${e.kind} ${e.subject} ${String(e.data['code'] ?? e.data['signal'])}`;
    return `${e.kind} ${e.subject}${attempt}`;
  };
  t.same(history.map(line), [
    'job.allocated j1 attempt 0',
    'job.state j1 queued→pending',
    'job.state j1 pending→starting',
    'rank.started j1/0',
    'rank.started j1/1',
    'job.state j1 starting→running',
    'rank.exited j1/1 2',
    'job.stopping j1 attempt 0',
    'rank.exited j1/0 SIGTERM',
    'job.attempt j1 attempt 0',
    'job.state j1 running→queued',
    'job.released j1 attempt 0',
    'job.allocated j1 attempt 1',
    'job.state j1 queued→pending',
    'job.state j1 pending→starting',
    'rank.started j1-1/0',
    'rank.started j1-1/1',
    'job.state j1 starting→running',
    'rank.exited j1-1/0 0',
    'rank.exited j1-1/1 0',
    'job.state j1 running→succeeded',
    'job.released j1 attempt 1',
  ]);
  const attempt = history.find((e) => e.kind === 'job.attempt')!;
  t.same(attempt.data, {
    attempt: 0,
    state: 'failed',
    reason: 'rank 1 on n2 exited with code 2',
    excluded: [],
    delayMs: 0,
  });
  t.end();
});

t.test('--restart-delay: the job is due after it, and quick restarts back off', (t) => {
  const w = new World(t, { maxRestarts: 3, restartDelay: 5 });
  w.begin(['n1']);
  w.started(0);
  w.clock.advance(10_000);
  w.exit(0, 1);
  t.equal(w.stored().restartAt, w.clock.now() + 5_000, 'first restart: --restart-delay');
  w.clock.advance(5_000);
  w.begin(['n1']);
  w.started(0);
  w.clock.advance(1_000);
  w.exit(0, 1);
  t.equal(w.stored().restartAt, w.clock.now() + 5_000, 'attempt 1 failed within a minute: max(5 s, 1 s) × 1');
  w.clock.advance(5_000);
  w.begin(['n1']);
  w.started(0);
  w.exit(0, 1);
  t.equal(w.stored().restartAt, w.clock.now() + 10_000, 'attempt 2 too: doubled');
  t.same(
    w.repo.attempts.list('j1').map((a) => a.restartDelayMs),
    [5_000, 5_000, 10_000],
    'each attempt records the wait that followed it',
  );
  t.end();
});
