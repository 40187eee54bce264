// The scheduling pass, table-driven: each row is a cluster (4-core nodes read by the real
// facts reader from generated sysfs trees), what running jobs hold, and a queue of jobs
// admitted by the real admission; the real pass decides, and the row says which jobs start
// where and why each other one waits. Time is a fixed "now": holds end at offsets from it.
import t from 'tap';
import type { JobSubmit, PlacementSpec } from '@rankd/protocol';
import { admit } from '#controller/jobs/job-admission';
import type { PlannerNode, PlanOptions } from '@rankd/planner';
import type { Allocation } from '@rankd/planner';
import type { DrainedNode } from '#controller/schedule/drained';
import { AllocationLedger } from '#controller/schedule/ledger';
import type { UserLimits } from '#controller/schedule/limits';
import type { QueuedJob } from '#controller/schedule/placement';
import { queueOrder, schedulingPass } from '#controller/schedule/scheduling-pass';
import { cluster } from '../planner/cluster.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');
const MINUTE = 60_000;
const options: PlanOptions = { pickPort: () => 29500, defaultCpusPerRank: 'share' };

interface Hold {
  id: string;
  owner?: string;
  /** Node → the CPUs it holds there. */
  on: Record<string, number[]>;
  /** When its time limit ends it, from now; null without one. */
  endsInMs: number | null;
}

interface Queued {
  id: string;
  placement: PlacementSpec;
  owner?: string;
  priority?: number;
  timeout?: number;
  /** Submission order: ms after the first. */
  at?: number;
}

interface Row {
  name: string;
  nodes: string[];
  drained?: Record<string, string>;
  holds?: Hold[];
  queue: Queued[];
  limits?: UserLimits;
  /** Job → the nodes it starts on. */
  starts: Record<string, string[]>;
  /** Job → why it waits. */
  waits: Record<string, string>;
}

const rows: Row[] = [
  {
    name: 'a job that fits an idle cluster starts',
    nodes: ['n1', 'n2'],
    queue: [{ id: 'a', placement: { ntasks: 2, cpusPerRank: 1 } }],
    starts: { a: ['n1', 'n2'] },
    waits: {},
  },
  {
    name: 'priority comes before submission order',
    nodes: ['n1'],
    queue: [
      { id: 'early', placement: { ntasks: 4, cpusPerRank: 1 }, at: 0 },
      { id: 'urgent', placement: { ntasks: 4, cpusPerRank: 1 }, priority: 100, at: 1 },
    ],
    starts: { urgent: ['n1'] },
    waits: { early: 'needs 1 node with 4 free cores; 0 have room now' },
  },
  {
    name: 'held cores are not given twice: the job waits for them',
    nodes: ['n1'],
    holds: [{ id: 'r', on: { n1: [0, 1, 2] }, endsInMs: null }],
    queue: [{ id: 'a', placement: { ntasks: 2, cpusPerRank: 1 } }],
    starts: {},
    waits: { a: 'needs 1 node with 2 free cores; 0 have room now' },
  },
  {
    name: 'what is left beside a hold is used',
    nodes: ['n1'],
    holds: [{ id: 'r', on: { n1: [0, 1] }, endsInMs: null }],
    queue: [{ id: 'a', placement: { ntasks: 2, cpusPerRank: 1 } }],
    starts: { a: ['n1'] },
    waits: {},
  },
  {
    name: 'backfill: a job that ends before the head could start goes ahead of it',
    nodes: ['n1', 'n2'],
    holds: [{ id: 'r', on: { n1: [0, 1, 2, 3] }, endsInMs: 10 * MINUTE }],
    queue: [
      { id: 'head', placement: { ntasks: 8, cpusPerRank: 1 }, at: 0 },
      { id: 'short', placement: { ntasks: 1, cpusPerRank: 1 }, timeout: 60, at: 1 },
    ],
    starts: { short: ['n2'] },
    waits: { head: 'needs 2 nodes with 4 free cores; 1 has room now' },
  },
  {
    name: 'backfill: a job without a time limit that would take what the head needs waits behind it',
    nodes: ['n1', 'n2'],
    holds: [{ id: 'r', on: { n1: [0, 1, 2, 3] }, endsInMs: 10 * MINUTE }],
    queue: [
      { id: 'head', placement: { ntasks: 8, cpusPerRank: 1 }, at: 0 },
      { id: 'endless', placement: { ntasks: 1, cpusPerRank: 1 }, at: 1 },
    ],
    starts: {},
    waits: {
      head: 'needs 2 nodes with 4 free cores; 1 has room now',
      endless: 'waits behind job head, which is first in the queue: starting now would delay it',
    },
  },
  {
    name: 'backfill: a job that outlives the reservation but takes nothing the head needs starts',
    nodes: ['n1', 'n2', 'n3'],
    holds: [{ id: 'r', on: { n1: [0, 1, 2, 3] }, endsInMs: 10 * MINUTE }],
    queue: [
      { id: 'head', placement: { nodes: 2, ntasks: 8, cpusPerRank: 1, nodelist: ['n1', 'n2'] }, at: 0 },
      { id: 'elsewhere', placement: { ntasks: 4, cpusPerRank: 1, nodelist: ['n3'] }, at: 1 },
    ],
    starts: { elsewhere: ['n3'] },
    waits: { head: 'n1 has 0 free cores; the job needs 4 free cores there' },
  },
  {
    name: 'an --exclusive job takes a node no job is on',
    nodes: ['n1', 'n2'],
    holds: [{ id: 'r', on: { n1: [0] }, endsInMs: null }],
    queue: [{ id: 'alone', placement: { nodes: 1, ntasks: 1, cpusPerRank: 1, exclusive: true } }],
    starts: { alone: ['n2'] },
    waits: {},
  },
  {
    name: 'a user at --max-jobs-per-user waits; another user starts',
    nodes: ['n1'],
    limits: { maxJobs: 1 },
    holds: [{ id: 'r', owner: 'alice', on: { n1: [0] }, endsInMs: null }],
    queue: [
      { id: 'alice2', owner: 'alice', placement: { ntasks: 1, cpusPerRank: 1 }, at: 0 },
      { id: 'bob1', owner: 'bob', placement: { ntasks: 1, cpusPerRank: 1 }, at: 1 },
    ],
    starts: { bob1: ['n1'] },
    waits: { alice2: 'user alice runs 1 job, the most one user may (--max-jobs-per-user 1)' },
  },
  {
    name: 'a limit counts the jobs started earlier in the same pass',
    nodes: ['n1', 'n2'],
    limits: { maxCores: 4 },
    queue: [
      { id: 'first', owner: 'alice', placement: { ntasks: 3, cpusPerRank: 1 }, at: 0 },
      { id: 'second', owner: 'alice', placement: { ntasks: 2, cpusPerRank: 1 }, at: 1 },
    ],
    starts: { first: ['n1', 'n2'] },
    waits: { second: 'user alice runs on 3 cores; 2 more would pass the limit of 4 (--max-cores-per-user)' },
  },
  {
    name: 'a job that only a drained node could take waits with the drain reason',
    nodes: ['n1'],
    drained: { n2: 'bad DIMM' },
    queue: [{ id: 'wide', placement: { ntasks: 8, cpusPerRank: 1 } }],
    starts: {},
    waits: { wide: 'node n2 drained: bad DIMM' },
  },
  {
    name: 'a job that fits the ready nodes starts whatever is drained',
    nodes: ['n1'],
    drained: { n2: 'bad DIMM' },
    queue: [{ id: 'small', placement: { ntasks: 2, cpusPerRank: 1 } }],
    starts: { small: ['n1'] },
    waits: {},
  },
];

/** "node:cpu" for every CPU an allocation holds. */
function cpusOf(alloc: Allocation): string[] {
  return Object.entries(alloc.nodes).flatMap(([n, a]) => a.cpus.map((c) => `${n}:${c}`));
}

const machines = new Map<string, PlannerNode>();

/** Each node a 4-core, single-socket machine; built once per name. */
function nodesNamed(dir: string, names: readonly string[]): PlannerNode[] {
  const missing = names.filter((n) => !machines.has(n));
  const machine = { packages: 1, coresPerPackage: 4, threadsPerCore: 1, cpu: { modelName: 'table 4-core' } };
  const specs = missing.map((name) => ({ name, address: null, machine: { ...machine, host: { hostname: name } } }));
  for (const node of cluster(dir, specs)) machines.set(node.name, node);
  return names.map((n) => machines.get(n)!);
}

for (const row of rows) {
  t.test(row.name, (t) => {
    const dir = t.testdir();
    const nodes = nodesNamed(dir, row.nodes);
    const drains = Object.entries(row.drained ?? {});
    const drained: DrainedNode[] = drains.map(([name, drain]) => ({ ...nodesNamed(dir, [name])[0]!, drain }));
    const limits = row.limits ?? {};
    const ledger = new AllocationLedger();
    const owners = new Map<string, { owner: string | null; cores: number }>();
    for (const h of row.holds ?? []) {
      const nodesHeld = Object.fromEntries(Object.entries(h.on).map(([n, cpus]) => [n, { cpus, gpus: [] }]));
      const endsAt = h.endsInMs === null ? Infinity : NOW + h.endsInMs;
      ledger.hold({ id: h.id, alloc: { mode: 'normal', nodes: nodesHeld }, endsAt });
      owners.set(h.id, { owner: h.owner ?? null, cores: Object.values(h.on).reduce((n, cpus) => n + cpus.length, 0) });
    }
    const queue: QueuedJob[] = row.queue.map((q) => {
      const submit: JobSubmit = {
        command: ['true'],
        placement: q.placement,
        ...(q.priority === undefined ? {} : { priority: q.priority }),
        ...(q.timeout === undefined ? {} : { timeout: q.timeout }),
      };
      return admit(q.id, submit, q.owner ?? null, NOW - MINUTE + (q.at ?? 0), nodes, options, limits, drained).job;
    });
    const usageOf = (id: string) => owners.get(id);
    const ordered = [...queue].sort(queueOrder);
    const result = schedulingPass({ queue: ordered, ledger, nodes, drained, options, limits, usageOf, now: NOW });

    const starts = Object.fromEntries(result.starts.map((s) => [s.job.id, s.rankMap.nodes.map((n) => n.name)]));
    t.same(starts, row.starts, 'starts');
    t.same([...result.waits.keys()].sort(), Object.keys(row.waits).sort(), 'the jobs that wait');
    for (const [id, reason] of Object.entries(row.waits)) t.equal(result.waits.get(id), reason, `why ${id} waits`);
    const taken = new Set([...ledger.jobs.values()].flatMap((j) => cpusOf(j.alloc)));
    for (const s of result.starts) {
      const held = cpusOf(s.alloc);
      t.same(
        held.filter((c) => taken.has(c)),
        [],
        `${s.job.id} holds no core a running job or an earlier start holds`,
      );
      for (const c of held) taken.add(c);
      const endsAt = s.job.timeLimitMs === null ? Infinity : NOW + s.job.timeLimitMs;
      t.equal(s.endsAt, endsAt, `${s.job.id} ends at its time limit from now`);
    }
    t.equal(ledger.jobs.size, (row.holds ?? []).length, 'the pass decided on a copy: the ledger holds what it held');
    t.end();
  });
}
