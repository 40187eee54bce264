// schedule: one scheduling pass of the controller's queue at fleet scale, in-process
// (the controller runs passes in its own process; start-up is not scheduling).
//
// 1,024 nodes with the facts of one of hwloc's captured trees (16amd64-8n2c: 16 cores in
// 8 NUMA nodes), renamed per node, and 1,000 queued jobs of mixed shapes: 1 to 64 nodes,
// 1 to 8 ranks per node, 1 or 2 cores per rank, some --exclusive, some with a time
// limit, three priorities. Two states of the cluster, as a pass meets them:
// - full: every node held by a running job (time limits spread over an hour), so no job
//   starts and the pass finds, for the head of the queue, when and where it would start
//   (the EASY reservation) and judges every other job against it;
// - half free: 512 nodes held, so the pass plans and starts every job that fits, in order,
//   until the rest must wait.
// Demands come from the controller's own admission (the plan on the idle cluster), not
// timed; the timed call is schedulingPass, the function the controller's Scheduler runs.
import path from 'node:path';
import type { JobSubmit } from '@rankd/protocol';
import { admit } from '#controller/jobs/job-admission';
import { AllocationLedger } from '#controller/schedule/ledger';
import type { QueuedJob } from '#controller/schedule/placement';
import { queueOrder, schedulingPass, type PassResult } from '#controller/schedule/scheduling-pass';
import { allocationOf, planRankMap, type PlannerNode } from '@rankd/planner';
import { readFacts } from '@rankd/topology';
import { timeCall } from '../lib/clock.js';
import { conformanceDir, dumpName, extractDump, listDumps } from '../lib/conformance.js';
import {
  measured,
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
  type Row,
} from '../lib/figure.js';
import { repeat } from '../lib/interleave.js';
import { summarize } from '../lib/stats.js';
import { seededRandom } from '../shared/seeded-random.js';

const NODES = 1024;
const QUEUED = 1000;
const SOURCE_DUMP = '16amd64-8n2c.tar.bz2';
const GOAL: Goal = { on: 'rankd', op: '<', value: 50, text: '< 50 ms' };

export const scheduleFigure: FigureDescriptor = {
  name: 'schedule',
  title: 'a scheduling pass over 1,000 queued jobs and 1,024 nodes',
  peers: [],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const notes: string[] = [];
  const labels = [
    `pass, cluster full (${QUEUED.toLocaleString('en-US')} queued × ${NODES.toLocaleString('en-US')} nodes)`,
    `pass, half the nodes free (${QUEUED.toLocaleString('en-US')} queued × ${NODES.toLocaleString('en-US')} nodes)`,
  ];
  const skip = (why: string): FigureReport => ({
    rows: labels.map((figure) => ({ figure, rankd: notMeasured(why), goals: [GOAL] })),
    notes,
    limits: '',
    peersUsed: [],
  });
  const dump = listDumps(ctx.repoRoot)?.find((d) => d.tarball === SOURCE_DUMP);
  if (!dump) return skip(`${SOURCE_DUMP} is not in the hwloc corpus (${conformanceDir(ctx.repoRoot)})`);
  const facts = readFacts({ root: await extractDump(ctx.repoRoot, dump, path.join(ctx.tmpDir, 'dumps')) });
  const nodes: PlannerNode[] = Array.from({ length: NODES }, (_, i) => {
    const name = `node${String(i).padStart(4, '0')}`;
    return {
      name,
      address: `127.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`,
      facts: { ...facts, host: { ...facts.host, hostname: name } },
    };
  });
  notes.push(
    `Facts of every node: ${dumpName(dump)} (${facts.cpu.cores} cores, ${facts.numa.nodes.length} NUMA nodes), renamed per node.`,
  );

  const rnd = seededRandom(14); // seeded: the same job mix in every run
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const now = Date.now();
  const options = { pickPort: () => 29500 };
  const queued: QueuedJob[] = [];
  const shapes = new Set<string>();
  for (let i = 0; i < QUEUED; i++) {
    const exclusive = rnd() < 0.1;
    const submit: JobSubmit = {
      command: ['true'],
      placement: {
        nodes: pick([1, 1, 2, 4, 8, 16, 32, 64]),
        ranksPerNode: pick([1, 2, 4, 8]),
        cpusPerRank: pick([1, 2]),
        ...(exclusive ? { exclusive: true } : {}),
      },
      priority: pick([0, 0, 0, 10, -10]),
      ...(rnd() < 0.5 ? { timeout: pick([600, 1800, 3600, 7200]) } : {}),
    };
    const { job } = admit(`q${i}`, submit, pick(['alice', 'bob', 'carol', 'dave']), now + i, nodes, options, {});
    queued.push(job);
    shapes.add(JSON.stringify(submit.placement));
  }
  queued.sort(queueOrder);
  notes.push(
    `${QUEUED} queued jobs of ${shapes.size} distinct specs; 10 % --exclusive, half with a --timeout of 10 min to 2 h, priorities -10, 0 and 10.`,
  );

  const factsOf = (_name: string) => facts;
  const ledgerWith = (held: number): AllocationLedger => {
    const ledger = new AllocationLedger();
    for (let i = 0; i < held; i++) {
      // a running job holding all of node i, ending within the hour
      const map = planRankMap([nodes[i]!], { nodes: 1, ranksPerNode: 1 }, options);
      ledger.hold({ id: `r${i}`, alloc: allocationOf(map, {}, factsOf), endsAt: now + 60_000 + rnd() * 3_600_000 });
    }
    return ledger;
  };
  const rows: Row[] = [];
  for (const [label, held] of [
    [labels[0]!, NODES],
    [labels[1]!, NODES / 2],
  ] as const) {
    const ledger = ledgerWith(held);
    const pass = (): PassResult =>
      schedulingPass({ queue: queued, ledger, nodes, drained: [], options, limits: {}, usageOf: () => undefined, now });
    const result = pass();
    ctx.log(`schedule: ${label}: ${result.starts.length} jobs would start`);
    notes.push(
      `${label}: the pass starts ${result.starts.length} jobs (${result.starts.reduce((n, s) => n + Object.keys(s.alloc.nodes).length, 0)} nodes) and leaves ${result.waits.size} waiting; the ledger is not changed, so every round is the same pass.`,
    );
    const samples = await repeat(() => timeCall(pass), { samples: ctx.rounds * 3, warmup: 2 });
    rows.push({ figure: label, rankd: measured('ms', summarize(samples)), goals: [GOAL] });
  }
  return {
    rows,
    notes,
    limits: [
      'A pass is pure computation over what the controller holds in memory: no I/O.',
      'Jobs whose placement failed are remembered per spec within a pass, so 1,000 jobs of a few dozen specs cost a few dozen placements until something starts;',
      'each start plans the job on the free facts of its nodes, and the head of the queue is placed once per running job released in its reservation search.',
    ].join(' '),
    peersUsed: [],
  };
}
