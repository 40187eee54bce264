// The job manager with --preflight, in process: the real manager, scheduler, lifecycle, node
// registry and store (SQLite in a temporary directory) over 4-core nodes read from generated
// sysfs trees. The agents are fakes that record what they are sent, and the fabric check is
// a fake whose answers the test gives (test/jobs/preflight-decision.test.ts judges real
// checks); time is a fake clock, so the check's deadline and its busy retries are driven.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import pino from 'pino';
import {
  CheckErrorCode,
  RankdError,
  type ControllerMessage,
  type JobSubmit,
  type JobView,
  type NetCheckResult,
  type PlacementSpec,
} from '@rankd/protocol';
import type { PlannerNode } from '@rankd/planner';
import { JobManager } from '#controller/jobs/job-manager';
import { JobsRepo } from '#controller/jobs/jobs-repo';
import { LogStore } from '#controller/jobs/log-store';
import type { PreflightChecks } from '#controller/jobs/preflight';
import { NodeRegistry, type AgentLink } from '#controller/nodes/node-registry';
import { defaultFleetTiming } from '#controller/nodes/timing';
import { OpenMpiMode } from '#controller/openmpi/openmpi-mode';
import { openDatabase } from '#controller/store/database';
import { EventsRepo } from '#controller/store/events-repo';
import { NodesRepo } from '#controller/store/nodes-repo';
import { FakeClock } from '../helpers/fake-clock.js';
import { cluster } from '../planner/cluster.js';

const T0 = Date.parse('2026-11-26T05:00:00Z');
const log = pino({ level: 'silent' });
const NODES = ['n1', 'n2', 'n3', 'n4'];
let machines: PlannerNode[] | null = null;

function fourNodes(dir: string): PlannerNode[] {
  const machine = (name: string) => ({ packages: 1, coresPerPackage: 4, threadsPerCore: 1, host: { hostname: name } });
  return (machines ??= cluster(
    dir,
    NODES.map((name) => ({ name, address: null, machine: machine(name) })),
  ));
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** A check the test answers: each run waits for `answer` or `refuse`. */
class FakeChecks implements PreflightChecks {
  readonly calls: Array<{ nodes: string[]; threshold: number }> = [];
  private pending: Array<{ resolve: (r: NetCheckResult) => void; reject: (e: Error) => void }> = [];

  run(nodes: readonly string[], threshold: number): Promise<NetCheckResult> {
    this.calls.push({ nodes: [...nodes], threshold });
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  }

  /** The oldest run gets a check of its nodes in which `slow` are flagged. */
  answer(slow: readonly string[] = []): void {
    const nodes = this.calls[this.calls.length - this.pending.length]!.nodes;
    this.pending.shift()!.resolve(checkOf(nodes, slow));
  }

  refuse(err: Error): void {
    this.pending.shift()!.reject(err);
  }
}

/** A check of `nodes` in the shape CheckService stores: pairs in order, `slow` flagged with a finding. */
function checkOf(nodes: readonly string[], slow: readonly string[]): NetCheckResult {
  const median = 3.77e9;
  const links = [];
  for (let i = 0; i + 1 < nodes.length; i += 2) {
    for (const [src, dst] of [
      [nodes[i]!, nodes[i + 1]!],
      [nodes[i + 1]!, nodes[i]!],
    ] as const) {
      const flagged = slow.includes(src) || slow.includes(dst);
      const bps = flagged ? 188e6 : median;
      const why = flagged ? '188 Mbit/s, 5 % of the tcp median 3.77 Gbit/s' : null;
      links.push({
        rail: 'tcp',
        src,
        dst,
        round: 0,
        startedAt: T0,
        endedAt: T0,
        bandwidthBps: bps,
        latencyUs: 60,
        error: null,
        flagged,
        why,
      });
    }
  }
  const verdict = (node: string) =>
    slow.includes(node)
      ? {
          node,
          verdict: 'flagged' as const,
          reason: `2 of 2 links flagged: ${node}→nX 188 Mbit/s, 5 % of the tcp median 3.77 Gbit/s`,
        }
      : { node, verdict: 'ok' as const, reason: null };
  return {
    id: `c-${slow.join('-') || 'ok'}`,
    kind: 'net',
    startedAt: T0,
    endedAt: T0,
    by: null,
    pattern: nodes.join(','),
    durationS: 1,
    threshold: 0.8,
    rounds: 3,
    roundsRun: 2,
    rails: [
      {
        name: 'tcp',
        kind: 'tcp',
        tools: ['iperf3'],
        medianBps: median,
        thresholdBps: median * 0.8,
        medianLatencyUs: 60,
      },
    ],
    nodes: nodes.map((n) => ({ ...verdict(n), bandwidth: null, latencyUs: null })),
    links,
    flagged: [...slow],
    drained: [],
    message: null,
  };
}

class World {
  readonly manager: JobManager;
  readonly events: EventsRepo;
  readonly checks = new FakeChecks();
  readonly clock = new FakeClock(T0);
  /** What agents were sent: `node type id`. */
  readonly sent: string[] = [];

  /** A controller's job side over `dir`: a fresh one, or, given the dir of another, its restart. */
  constructor(t: Test, dir = t.testdir()) {
    const db = openDatabase(dir);
    t.teardown(() => db.close());
    const repo = new JobsRepo(db);
    this.events = new EventsRepo(db);
    const logs = new LogStore(join(dir, 'logs'));
    t.teardown(() => logs.closeAll());
    const registry = new NodeRegistry(new NodesRepo(db), this.events, defaultFleetTiming, log, () => this.clock.now());
    registry.load();
    const agents = { send: (node: string, m: ControllerMessage) => this.record(node, m) };
    const openmpi = new OpenMpiMode(agents, this.events, (node) => Boolean(registry.link(node)));
    this.manager = new JobManager(
      repo,
      this.events,
      logs,
      registry,
      agents,
      openmpi,
      log,
      undefined,
      {},
      'share',
      this.clock,
    );
    this.manager.usePreflight(this.checks);
    const facts = fourNodes(join(dir, 'sysfs'));
    for (const name of NODES) {
      const link: AgentLink = {
        remoteAddress: null,
        send: (m) => this.record(name, m),
        sendEncoded: () => true,
        close: () => {},
      };
      const hello = { type: 'hello' as const, name, version: 'test', capabilities: [], labels: {} };
      registry.register({ ...hello, facts: facts.find((n) => n.name === name)!.facts }, link, name);
    }
  }

  private record(node: string, m: ControllerMessage): boolean {
    this.sent.push(`${node} ${m.type} ${'jobId' in m ? m.jobId : ''}`);
    return true;
  }

  submit(placement: PlacementSpec, extra: Partial<JobSubmit> = { preflight: true }): string {
    return this.manager.submit({ command: ['train.py'], placement, ...extra }).view.id;
  }

  view(id: string): JobView {
    return this.manager.view(id)!;
  }

  startsOf(id: string): string[] {
    return this.sent.filter((s) => s.endsWith(` job.start ${id}`)).map((s) => s.split(' ')[0]!);
  }

  preflightEvents(id: string): unknown[] {
    return this.events
      .list(0, 10_000)
      .filter((e) => e.kind === 'job.preflight' && e.subject === id)
      .map((e) => e.data['action']);
  }
}

/** Two whole nodes: n1 and n2 are the planner's first pick. */
const twoNodes: PlacementSpec = { ntasks: 2, nodes: 2, cpusPerRank: 4 };

t.test(
  'the ranks wait for the preflight, which measures the plan with referees, and start when it passes',
  async (t) => {
    const w = new World(t);
    const id = w.submit(twoNodes);
    t.match(w.view(id), {
      state: 'queued',
      preflight: true,
      preflightThreshold: 0.8,
      reason: 'preflight: measuring n1, n2 (1 s probes, threshold 0.8; n3, n4 as referees)',
    });
    t.same(w.checks.calls, [{ nodes: ['n1', 'n2', 'n3', 'n4'], threshold: 0.8 }], 'the plan, then idle referees');
    await settle();
    t.same(w.startsOf(id), [], 'no rank is sent while the check runs');
    w.checks.answer([]);
    await settle();
    t.equal(w.view(id).state, 'starting');
    t.same(w.startsOf(id), ['n1', 'n2'], 'then the ranks start where they were planned');
    t.same(w.preflightEvents(id), ['measuring', 'pass']);
  },
);

t.test('a flagged node is left out through the exclusion path, and the job is planned and checked again', async (t) => {
  const w = new World(t);
  const id = w.submit(twoNodes, { preflight: true, preflightThreshold: 0.3 });
  w.checks.answer(['n1']);
  await settle();
  t.same(w.view(id).excluded, ['n1'], 'n1 is left out, as a failed attempt would leave it');
  t.same(w.startsOf(id), []);
  t.same(
    w.checks.calls.map((c) => c.nodes),
    [
      ['n1', 'n2', 'n3', 'n4'],
      ['n2', 'n3', 'n4'],
    ],
    'the new plan is n2, n3 and its referee n4; n1 is no referee for a job that left it out',
  );
  t.match(w.view(id).reason, /^preflight: measuring n2, n3 \(1 s probes, threshold 0\.3; n4 as referee\)$/);
  const leftOut = w.events.list(0, 10_000).find((e) => e.kind === 'job.preflight' && e.data['action'] === 'leave-out');
  t.match(leftOut?.data, {
    nodes: ['n1'],
    note: /^preflight: n1 left out: 2 of 2 links flagged: .*; planning again without it \(check c-n1\)$/,
  });
  w.checks.answer([]);
  await settle();
  t.same(w.startsOf(id), ['n2', 'n3'], 'it runs on the two others');
});

t.test('--nodelist with a flagged node fails with the finding, exit 65, and frees what it held', async (t) => {
  const w = new World(t);
  const id = w.submit({ ntasks: 2, nodelist: ['n1', 'n2'], cpusPerRank: 4 });
  const other = w.submit({ ntasks: 4, nodes: 4, cpusPerRank: 4 }, {});
  t.equal(w.view(other).state, 'queued', 'a job that needs every node waits while the preflight holds two');
  w.checks.answer(['n1']);
  await settle();
  const view = w.view(id);
  t.match(view, { state: 'failed', exitCode: 65, ranks: [], attempts: [], excluded: [] });
  t.match(
    view.reason,
    new RegExp(
      '^preflight: n1 flagged: 2 of 2 links flagged: .*; the job names its nodes \\(--nodelist\\), ' +
        'so none can be left out \\(check c-n1\\) \\(RANKD_PREFLIGHT_FAILED\\)$',
    ),
  );
  t.same(w.startsOf(id), [], 'no rank of it was sent anywhere');
  t.same(w.startsOf(other), NODES, 'its cores are free again: the other job starts on them');
});

t.test('a job that needs every ready node cannot lose one: it fails, saying why', async (t) => {
  const w = new World(t);
  const id = w.submit({ ntasks: 4, nodes: 4, cpusPerRank: 4 });
  t.same(w.checks.calls[0]?.nodes, NODES, 'four nodes: no referee');
  w.checks.answer(['n3']);
  await settle();
  t.match(w.view(id), { state: 'failed', exitCode: 65 });
  t.match(
    w.view(id).reason,
    /the job cannot be placed without it: needs 4 nodes .*3 have room now \(check c-n3\) \(RANKD_PREFLIGHT_FAILED\)$/,
  );
});

t.test('cancel during the preflight ends the job at once; its hold lasts until the check is over', async (t) => {
  const w = new World(t);
  const id = w.submit(twoNodes);
  const other = w.submit({ ntasks: 4, nodes: 4, cpusPerRank: 4 }, {});
  w.manager.cancel(id);
  t.match(w.view(id), { state: 'cancelled', exitCode: 130, reason: 'cancelled by request during its preflight' });
  await settle();
  t.equal(w.view(other).state, 'queued', 'the nodes under measurement are not given to another job yet');
  w.checks.answer([]);
  await settle();
  t.same(w.startsOf(id), [], 'the cancelled job never started a rank, though its check passed');
  t.same(w.startsOf(other), NODES, 'once the check is over its nodes are free');
});

t.test('a one-node job: the preflight is a no-op that says so, and the ranks start', async (t) => {
  const w = new World(t);
  const id = w.submit({ ntasks: 1 });
  t.match(w.view(id), {
    state: 'queued',
    reason: 'preflight: one node (n1): a net check measures pairs, so there is nothing to measure; starting',
  });
  await settle();
  t.same(w.checks.calls, [], 'no check ran');
  t.same(w.startsOf(id), ['n1']);
  t.same(w.preflightEvents(id), ['skipped']);
});

t.test('a check that never answers is bounded: the job fails at the deadline and its hold is freed', async (t) => {
  const w = new World(t);
  const id = w.submit(twoNodes);
  w.clock.advance(59_999);
  await settle();
  t.equal(w.view(id).state, 'queued', 'still measuring a millisecond before the deadline');
  w.clock.advance(1);
  await settle();
  t.match(w.view(id), { state: 'failed', exitCode: 65 });
  t.equal(
    w.view(id).reason,
    "preflight: could not measure the job's nodes: the check did not answer within 60 s (RANKD_PREFLIGHT_FAILED)",
  );
  const other = w.submit(twoNodes, {});
  t.equal(w.view(other).state, 'starting', 'nothing is held for it any more');
});

t.test('nodes busy with another check are waited for, then measured', async (t) => {
  const w = new World(t);
  const id = w.submit(twoNodes);
  w.checks.refuse(new RankdError(CheckErrorCode.Busy, 'a check is already measuring n3'));
  await settle();
  t.equal(w.checks.calls.length, 1);
  w.clock.advance(1000);
  await settle();
  t.equal(w.checks.calls.length, 2, 'tried again a second later');
  w.checks.answer([]);
  await settle();
  t.same(w.startsOf(id), ['n1', 'n2']);
});

t.test('refusals: a threshold without a preflight, and a preflight where no checks run', async (t) => {
  const w = new World(t);
  t.throws(() => w.submit(twoNodes, { preflightThreshold: 0.3 }), {
    code: 'RANKD_INVALID_REQUEST',
    message: /preflightThreshold is the threshold of a preflight/,
  });
  t.same(w.manager.list({ limit: 10 }).jobs, [], 'nothing was stored');
});

t.test('a controller restarted during a preflight finds the job queued and measures it again', async (t) => {
  const dir = t.testdir();
  const first = new World(t, dir);
  const id = first.submit(twoNodes);
  t.equal(first.checks.calls.length, 1, 'the first controller started a check, which never answers');
  const second = new World(t, dir);
  second.manager.restore();
  t.match(second.view(id), { state: 'queued', reason: /^preflight: measuring n1, n2 / }, 'restored queued');
  await settle();
  t.equal(second.checks.calls.length, 1, "the restored job's preflight runs again");
  second.checks.answer([]);
  await settle();
  t.same(second.startsOf(id), ['n1', 'n2'], 'and its ranks start once it passes');
  t.same(first.startsOf(id), [], 'never by the controller that stopped');
});
