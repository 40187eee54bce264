// The job lifecycle, table-driven: each row is a job (two nodes, a rank map from the real
// planner) and the events of its life as agents, the PMI exchange, the fleet and the clock
// deliver them; the row says which states the job passed through (from the history, so
// each transition is seen once), how it ended, and what the agents were sent. The real
// lifecycle, MPI strategies, store (SQLite in a temporary directory) and log store run;
// only the clock and the agents' links are fakes.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import pino from 'pino';
import type { Binding, JobState, JobSubmit, MpiMode, RankState, StreamName } from '@rankd/protocol';
import { DirectStart } from '#controller/jobs/direct-start';
import type { Clock } from '#controller/jobs/clock';
import { JobLifecycle } from '#controller/jobs/job-lifecycle';
import type { JobRecord } from '#controller/jobs/job-records';
import { JobsRepo } from '#controller/jobs/jobs-repo';
import { LogStore } from '#controller/jobs/log-store';
import { MasterPorts } from '#controller/jobs/master-ports';
import { OpenMpiMode } from '#controller/openmpi/openmpi-mode';
import { planRankMap, type PlannerNode } from '@rankd/planner';
import { openDatabase } from '#controller/store/database';
import { EventsRepo } from '#controller/store/events-repo';
import { cluster } from '../planner/cluster.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const GRACE_MS = 10_000;

/** Timers that fire only when the test moves time on. */
class FakeClock implements Clock {
  private at = T0;
  private timers: Array<{ due: number; fn: () => void; cancelled: boolean }> = [];

  now(): number {
    return this.at;
  }

  after(ms: number, fn: () => void): () => void {
    const timer = { due: this.at + ms, fn, cancelled: false };
    this.timers.push(timer);
    return () => (timer.cancelled = true);
  }

  advance(ms: number): void {
    const until = this.at + ms;
    for (;;) {
      const next = this.timers.filter((x) => !x.cancelled && x.due <= until).sort((a, b) => a.due - b.due)[0];
      if (!next) break;
      this.at = next.due;
      next.cancelled = true;
      next.fn();
    }
    this.at = until;
  }
}

/** Agents' links: what was sent to whom, and which nodes are connected. */
class FakeAgents {
  readonly sent: string[] = [];
  readonly connected: Set<string>;

  constructor(nodes: readonly string[]) {
    this.connected = new Set(nodes);
  }

  send = (node: string, m: { type: string } & Record<string, unknown>): boolean => {
    if (!this.connected.has(node)) return false;
    this.sent.push(describe(node, m));
    return true;
  };
}

/** One line per message, with what tells the rows apart. */
function describe(node: string, m: { type: string } & Record<string, unknown>): string {
  const launches = m['ranks'] as Array<{ rank: number }> | undefined;
  const ranks = launches ? ` ranks ${launches.map((r) => r.rank).join(',')}` : '';
  if (m.type === 'job.start') return `${node} job.start${ranks}${m['pmi'] ? ' with PMI' : ''}`;
  if (m.type === 'ompi.start') return `${node} ompi.start${ranks}${m['launcher'] ? ' with mpirun' : ''}`;
  if (m.type === 'job.abort' || m.type === 'ompi.abort') {
    return `${node} ${m.type} grace ${m['graceMs']}: ${m['reason']}`;
  }
  return `${node} ${m.type}`;
}

/** An event, and optionally what the job is right after it: its state, and the end it is stopping for. */
type Step = Event & { state?: JobState; stopping?: JobState | null };

type Event =
  | { started: number; binding?: Partial<Binding> }
  | { output: number; stream: StreamName; bytes: number }
  | { exit: number; code?: number | null; signal?: string | null; bytes?: number; error?: string; waits?: true }
  | { advance: number }
  | { lost: string }
  | { reported: string; holds: number[] }
  | { stop: JobState; reason: string }
  | { pmiFailed: number; exitCode: number | null; reason: string }
  | { mpirunEnded: true };

interface Row {
  name: string;
  ranks: number;
  submit?: Partial<JobSubmit>;
  mpi?: MpiMode;
  /** Nodes whose agents are not connected when the job begins. */
  offline?: string[];
  steps: Step[];
  /** The job's states as the history has them, from pending on. */
  states: JobState[];
  reason: string;
  exitCode: number | null;
  ranksEnd: RankState[];
  sent: string[];
}

// A job's exit code is its first non-zero rank status in order of arrival; a rank whose end
// is unknown counts 1, a rank killed by SIGTERM 143.
const fine = (rank: number): Step => ({ exit: rank, code: 0 });
const killed = (rank: number): Step => ({ exit: rank, code: null, signal: 'SIGTERM' });

const rows: Row[] = [
  {
    name: 'every rank exits 0: succeeded',
    ranks: 2,
    steps: [{ started: 0 }, { started: 1 }, fine(0), fine(1)],
    states: ['pending', 'starting', 'running', 'succeeded'],
    reason: 'all 2 ranks exited 0',
    exitCode: 0,
    ranksEnd: ['exited', 'exited'],
    sent: ['n1 job.start ranks 0 with PMI', 'n2 job.start ranks 1 with PMI', 'n1 job.release', 'n2 job.release'],
  },
  {
    name: '--mpi none: the starts carry no PMI',
    ranks: 2,
    mpi: 'none',
    steps: [{ started: 0 }, { started: 1 }, fine(0), fine(1)],
    states: ['pending', 'starting', 'running', 'succeeded'],
    reason: 'all 2 ranks exited 0',
    exitCode: 0,
    ranksEnd: ['exited', 'exited'],
    sent: ['n1 job.start ranks 0', 'n2 job.start ranks 1', 'n1 job.release', 'n2 job.release'],
  },
  {
    name: "fail-fast: a failed rank stops the others, and its code is the job's",
    ranks: 2,
    steps: [
      { started: 0, state: 'starting' },
      { started: 1, state: 'running' },
      { exit: 1, code: 3, stopping: 'failed' },
      killed(0),
    ],
    states: ['pending', 'starting', 'running', 'failed'],
    reason: 'rank 1 on n2 exited with code 3',
    exitCode: 3,
    ranksEnd: ['exited', 'exited'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      'n2 job.start ranks 1 with PMI',
      `n1 job.abort grace ${GRACE_MS}: rank 1 on n2 exited with code 3`,
      'n1 job.release',
      'n2 job.release',
    ],
  },
  {
    name: 'fail policy wait: the others run to their end',
    ranks: 2,
    submit: { failPolicy: 'wait' },
    steps: [{ started: 0 }, { started: 1 }, { exit: 1, code: 3, state: 'running', stopping: null }, fine(0)],
    states: ['pending', 'starting', 'running', 'failed'],
    reason: 'rank 1 on n2 exited with code 3',
    exitCode: 3,
    ranksEnd: ['exited', 'exited'],
    sent: ['n1 job.start ranks 0 with PMI', 'n2 job.start ranks 1 with PMI', 'n1 job.release', 'n2 job.release'],
  },
  {
    name: '--timeout: the job is stopped when its time is up, not a millisecond before',
    ranks: 2,
    submit: { timeout: 60 },
    steps: [
      { started: 0 },
      { started: 1 },
      { advance: 59_999, state: 'running', stopping: null },
      { advance: 1, state: 'running', stopping: 'timed-out' },
      killed(0),
      { ...killed(1), state: 'timed-out' },
    ],
    states: ['pending', 'starting', 'running', 'timed-out'],
    reason: 'timed out after 60 s',
    exitCode: 143,
    ranksEnd: ['exited', 'exited'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      'n2 job.start ranks 1 with PMI',
      `n1 job.abort grace ${GRACE_MS}: timed out after 60 s`,
      `n2 job.abort grace ${GRACE_MS}: timed out after 60 s`,
      'n1 job.release',
      'n2 job.release',
    ],
  },
  {
    name: '--timeout: a job that ended in time is not stopped later',
    ranks: 1,
    submit: { timeout: 60 },
    steps: [
      { started: 0 },
      { advance: 30_000 },
      { ...fine(0), state: 'succeeded' },
      { advance: 3_600_000, state: 'succeeded' },
    ],
    states: ['pending', 'starting', 'running', 'succeeded'],
    reason: 'rank 0 exited 0',
    exitCode: 0,
    ranksEnd: ['exited'],
    sent: ['n1 job.start ranks 0 with PMI', 'n1 job.release'],
  },
  {
    name: 'an exit that outruns its output waits for the bytes',
    ranks: 1,
    steps: [
      { started: 0 },
      { exit: 0, code: 0, bytes: 5, waits: true, state: 'running' },
      { output: 0, stream: 'stdout', bytes: 5, state: 'succeeded' },
    ],
    states: ['pending', 'starting', 'running', 'succeeded'],
    reason: 'rank 0 exited 0',
    exitCode: 0,
    ranksEnd: ['exited'],
    sent: ['n1 job.start ranks 0 with PMI', 'n1 job.release'],
  },
  {
    name: 'a binding other than the plan fails the job',
    ranks: 1,
    steps: [{ started: 0, binding: { verified: false, detail: 'CPUs 3, planned 0' } }, killed(0)],
    states: ['pending', 'starting', 'running', 'failed'],
    reason: 'rank 0 on n1: binding mismatch: CPUs 3, planned 0',
    exitCode: 143,
    ranksEnd: ['exited'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      `n1 job.abort grace ${GRACE_MS}: rank 0 on n1: binding mismatch: CPUs 3, planned 0`,
      'n1 job.release',
    ],
  },
  {
    name: "a rank that cannot start fails the job, with the agent's reason",
    ranks: 2,
    steps: [{ started: 1 }, { exit: 0, code: 127, error: 'no such program' }, killed(1)],
    states: ['pending', 'starting', 'running', 'failed'],
    reason: 'rank 0 on n1 failed to start: no such program (RANKD_RANK_SPAWN_FAILED)',
    exitCode: 127,
    ranksEnd: ['failed-to-start', 'exited'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      'n2 job.start ranks 1 with PMI',
      `n2 job.abort grace ${GRACE_MS}: rank 0 on n1 failed to start: no such program (RANKD_RANK_SPAWN_FAILED)`,
      'n1 job.release',
      'n2 job.release',
    ],
  },
  {
    name: 'a lost node: its ranks end unknown, the job is lost, and that node keeps its spool',
    ranks: 2,
    steps: [{ started: 0 }, { started: 1 }, { lost: 'n2' }, killed(0)],
    states: ['pending', 'starting', 'running', 'lost'],
    reason: 'node n2 lost',
    exitCode: 1,
    ranksEnd: ['exited', 'unknown'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      'n2 job.start ranks 1 with PMI',
      `n1 job.abort grace ${GRACE_MS}: node n2 lost`,
      `n2 job.abort grace ${GRACE_MS}: node n2 lost`,
      'n1 job.release',
    ],
  },
  {
    name: 'a node not connected at the start fails the job at once; its ranks never ran',
    ranks: 2,
    offline: ['n2'],
    steps: [{ ...killed(0), state: 'failed' }],
    states: ['pending', 'failed'],
    reason: 'node n2 is not connected',
    exitCode: 1,
    ranksEnd: ['exited', 'unknown'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      `n1 job.abort grace ${GRACE_MS}: node n2 is not connected`,
      'n1 job.release',
    ],
  },
  {
    name: "MPI_Abort through PMI fails the job whatever its fail policy, with the abort's code",
    ranks: 2,
    submit: { failPolicy: 'wait' },
    steps: [
      { started: 0 },
      { started: 1 },
      { pmiFailed: 1, exitCode: 7, reason: 'rank 1 called MPI_Abort(7)' },
      killed(0),
      killed(1),
    ],
    states: ['pending', 'starting', 'running', 'failed'],
    reason: 'rank 1 called MPI_Abort(7)',
    exitCode: 7,
    ranksEnd: ['exited', 'exited'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      'n2 job.start ranks 1 with PMI',
      `n1 job.abort grace ${GRACE_MS}: rank 1 called MPI_Abort(7)`,
      `n2 job.abort grace ${GRACE_MS}: rank 1 called MPI_Abort(7)`,
      'n1 job.release',
      'n2 job.release',
    ],
  },
  {
    name: 'cancel stops every rank; the job ends cancelled once they are gone',
    ranks: 2,
    steps: [
      { started: 0 },
      { started: 1 },
      { stop: 'cancelled', reason: 'cancelled by request' },
      killed(0),
      killed(1),
    ],
    states: ['pending', 'starting', 'running', 'cancelled'],
    reason: 'cancelled by request',
    exitCode: 143,
    ranksEnd: ['exited', 'exited'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      'n2 job.start ranks 1 with PMI',
      `n1 job.abort grace ${GRACE_MS}: cancelled by request`,
      `n2 job.abort grace ${GRACE_MS}: cancelled by request`,
      'n1 job.release',
      'n2 job.release',
    ],
  },
  {
    name: 'an agent that reconnects without a started rank: its end is unknown, and fail-fast stops the job',
    ranks: 2,
    steps: [{ started: 0 }, { started: 1 }, { reported: 'n2', holds: [] }, killed(0)],
    states: ['pending', 'starting', 'running', 'lost'],
    reason: 'agent on n2 no longer knows rank 1',
    exitCode: 1,
    ranksEnd: ['exited', 'unknown'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      'n2 job.start ranks 1 with PMI',
      `n1 job.abort grace ${GRACE_MS}: agent on n2 no longer knows rank 1`,
      'n1 job.release',
    ],
  },
  {
    name: 'an agent that reconnects without a rank that never started is sent its start again',
    ranks: 2,
    steps: [{ started: 0 }, { reported: 'n2', holds: [] }, { started: 1 }, fine(0), fine(1)],
    states: ['pending', 'starting', 'running', 'succeeded'],
    reason: 'all 2 ranks exited 0',
    exitCode: 0,
    ranksEnd: ['exited', 'exited'],
    sent: [
      'n1 job.start ranks 0 with PMI',
      'n2 job.start ranks 1 with PMI',
      'n2 job.start ranks 1 with PMI',
      'n1 job.release',
      'n2 job.release',
    ],
  },
  {
    name: '--mpi openmpi: the job stays live until mpirun has ended',
    ranks: 2,
    mpi: 'openmpi',
    steps: [
      { started: 0 },
      { started: 1 },
      fine(0),
      { ...fine(1), state: 'running' },
      { mpirunEnded: true, state: 'succeeded' },
    ],
    states: ['pending', 'starting', 'running', 'succeeded'],
    reason: 'all 2 ranks exited 0',
    exitCode: 0,
    ranksEnd: ['exited', 'exited'],
    sent: ['n1 ompi.start ranks 0 with mpirun', 'n2 ompi.start ranks 1', 'n1 job.release', 'n2 job.release'],
  },
  {
    name: '--mpi openmpi: stopping the job ends mpirun and its daemons on every node',
    ranks: 2,
    mpi: 'openmpi',
    steps: [{ started: 0 }, { started: 1 }, { exit: 1, code: 2 }, killed(0), { mpirunEnded: true }],
    states: ['pending', 'starting', 'running', 'failed'],
    reason: 'rank 1 on n2 exited with code 2',
    exitCode: 2,
    ranksEnd: ['exited', 'exited'],
    sent: [
      'n1 ompi.start ranks 0 with mpirun',
      'n2 ompi.start ranks 1',
      `n1 ompi.abort grace ${GRACE_MS}: rank 1 on n2 exited with code 2`,
      `n2 ompi.abort grace ${GRACE_MS}: rank 1 on n2 exited with code 2`,
      `n1 job.abort grace ${GRACE_MS}: rank 1 on n2 exited with code 2`,
      'n1 job.release',
      'n2 job.release',
    ],
  },
];

let nodes: PlannerNode[] | null = null;

/** Two 4-core nodes, n1 and n2, read from generated sysfs trees. */
function twoNodes(dir: string): PlannerNode[] {
  const machine = (name: string) => ({ packages: 1, coresPerPackage: 4, threadsPerCore: 1, host: { hostname: name } });
  return cluster(
    dir,
    ['n1', 'n2'].map((name) => ({ name, address: null, machine: machine(name) })),
  );
}

/** A row's world: the real lifecycle on a real store, with a fake clock and fake agents. */
interface Harness {
  t: Test;
  lifecycle: JobLifecycle;
  repo: JobsRepo;
  logs: LogStore;
  agents: FakeAgents;
  openmpi: OpenMpiMode;
  clock: FakeClock;
  id: string;
}

for (const row of rows) {
  t.test(row.name, (t) => {
    const dir = t.testdir();
    nodes ??= twoNodes(join(dir, 'sysfs'));
    const db = openDatabase(dir);
    t.teardown(() => db.close());
    const repo = new JobsRepo(db);
    const events = new EventsRepo(db);
    const logs = new LogStore(join(dir, 'logs'));
    t.teardown(() => logs.closeAll());
    const clock = new FakeClock();
    const agents = new FakeAgents(['n1', 'n2'].filter((n) => !row.offline?.includes(n)));
    const connected = (node: string) => agents.connected.has(node);
    const openmpi = new OpenMpiMode(agents, events, connected);
    const told = { ended: [] as JobState[], released: 0 };
    const lifecycle = new JobLifecycle({
      repo,
      events,
      logs,
      agents,
      connected,
      leaseMs: () => 30_000,
      ports: new MasterPorts(),
      modes: { pmi1: new DirectStart(agents, true), none: new DirectStart(agents, false), openmpi },
      clock,
      log: pino({ level: 'silent' }),
      hooks: {
        changed: () => {},
        ended: (_id, state) => told.ended.push(state),
        released: () => told.released++,
        attemptEnded: () => {},
        restarting: () => {},
        nodesFailed: () => {},
      },
    });

    const job = queuedJob(row);
    const spec = { ntasks: row.ranks, nodes: row.ranks, cpusPerRank: 1 };
    repo.create(job);
    lifecycle.begin(job, planRankMap(nodes, spec, { pickPort: () => 29500 }), { mode: 'normal', nodes: {} });

    const h: Harness = { t, lifecycle, repo, logs, agents, openmpi, clock, id: job.id };
    for (const step of row.steps) play(h, step);

    t.notOk(lifecycle.has(job.id), 'the job is no longer live');
    const stored = repo.get(job.id)!;
    const ended = { state: row.states.at(-1), reason: row.reason, exitCode: row.exitCode };
    t.same({ state: stored.state, reason: stored.reason, exitCode: stored.exitCode }, ended, 'how it ended, as stored');
    t.same(
      repo.ranks(stored).map((r) => r.state),
      row.ranksEnd,
      'how each rank ended, as stored',
    );
    const history = events.list().filter((e) => e.kind === 'job.state' && e.subject === job.id);
    t.same(
      history.map((e) => e.data['to']),
      row.states,
      'each state once, in order, in the history',
    );
    t.same(agents.sent, row.sent, 'what the agents were sent');
    const once = { ended: [row.states.at(-1)], released: 1 };
    t.same(told, once, 'the manager heard of the end once, and the hold was freed once');
    t.equal(openmpi.attempt(job.id), undefined, 'the MPI mode keeps nothing of the job');
    t.end();
  });
}

function queuedJob(row: Row): JobRecord {
  return {
    id: 'j1',
    name: null,
    idempotencyKey: null,
    owner: null,
    state: 'queued',
    reason: 'submitted',
    submit: { command: ['true'], ...row.submit, ...(row.mpi ? { mpi: row.mpi } : {}) },
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

function play(h: Harness, step: Step): void {
  const { t, lifecycle, id, clock } = h;
  const node = (rank: number) => lifecycle.get(id)!.ranks[rank]!.node;
  if ('started' in step) {
    const binding: Binding = { cpus: [0], memNodes: [0], verified: true, ...step.binding };
    const start = { pid: 1000 + step.started, startedAt: clock.now(), binding, warnings: [] };
    lifecycle.rankStarted(id, step.started, node(step.started), start);
  } else if ('output' in step) {
    const stored = h.logs.append(id, step.output, step.stream, 0, Buffer.alloc(step.bytes, 'x'));
    t.equal(stored.kind, 'stored', `rank ${step.output}'s ${step.stream} is stored`);
    lifecycle.outputStored(id, step.output, step.stream, h.logs.size(id, step.output, step.stream));
  } else if ('exit' in step) {
    const error = step.error ? { error: { code: 'RANKD_RANK_SPAWN_FAILED', message: step.error } } : {};
    const outputBytes = { stdout: step.bytes ?? 0, stderr: 0 };
    const exit = { code: step.code ?? null, signal: step.signal ?? null, endedAt: clock.now(), outputBytes, ...error };
    const what = step.waits ? `rank ${step.exit}'s exit waits for its output` : `rank ${step.exit} ended`;
    t.equal(lifecycle.exitReported(id, step.exit, exit), !step.waits, what);
  } else if ('advance' in step) {
    clock.advance(step.advance);
  } else if ('lost' in step) {
    lifecycle.nodeLost(step.lost);
  } else if ('reported' in step) {
    lifecycle.nodeReported(step.reported, new Set(step.holds.map((r) => `${id}/${r}`)));
  } else if ('stop' in step) {
    lifecycle.stop(id, step.stop, step.reason);
  } else if ('pmiFailed' in step) {
    const { pmiFailed: rank, exitCode, reason } = step;
    const m = { type: 'pmi.failed' as const, jobId: id, rank, exitCode, reason };
    lifecycle.pmiFailed(node(step.pmiFailed), m);
  } else {
    // what openmpi-launch.ts does when rank 0's node reports mpirun's exit
    t.ok(lifecycle.has(id), 'the job is held live while mpirun runs');
    h.openmpi.attempt(id)!.launcher = 'ended';
    lifecycle.recheck(id);
  }
  const live = lifecycle.get(id);
  const state = live?.job.state ?? h.repo.get(id)!.state;
  if (step.state !== undefined) t.equal(state, step.state, `then the job is ${step.state}`);
  if (step.stopping !== undefined) {
    t.equal(live?.stopping?.state ?? null, step.stopping, `then it stops for ${step.stopping}`);
  }
}
