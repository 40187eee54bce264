// plan: the planner over a large fleet. 1,024 nodes × 8 ranks, each node's facts read
// by the real reader from one of hwloc's captured trees (16amd64-8n2c: 8 NUMA nodes of
// 2 cores, so 8 ranks fit one per NUMA node), then renamed per node. In-process, warm:
// the controller plans in its own process, and start-up is not planning.
import path from 'node:path';
import type { Facts } from '@rankd/protocol';
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
import { importOptional } from '../lib/rankd.js';
import { summarize, type Stat } from '../lib/stats.js';
import type { ReadFacts } from './facts.js';

export const PLAN_NODES = 1024;
export const PLAN_RANKS_PER_NODE = 8;
const SOURCE_DUMP = '16amd64-8n2c.tar.bz2';
const GOAL: Goal = { on: 'rankd', op: '<', value: 100, text: '< 100 ms' };
const LABEL = `planning ${PLAN_NODES.toLocaleString('en-US')} nodes × ${PLAN_RANKS_PER_NODE} ranks`;

interface PlannerNode {
  name: string;
  address: string | null;
  facts: Facts;
}
type PlanRankMap = (nodes: PlannerNode[], spec: Record<string, unknown>) => { worldSize: number; ranks: unknown[] };

export const planFigure: FigureDescriptor = {
  name: 'plan',
  title: 'rank planning at fleet scale',
  peers: [],
  run,
};

/** Node i's address: inside 127.0.0.0/8, so even a stray use of it stays on this machine. */
function loopbackAddress(i: number): string {
  return `127.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const notes: string[] = [];
  const skip = (why: string): FigureReport => ({
    rows: [{ figure: LABEL, rankd: notMeasured(why), goals: [GOAL] }],
    notes,
    limits: limits(null),
    peersUsed: [],
  });
  const planner = await importOptional<{ planRankMap: PlanRankMap }>('@rankd/planner', 'planRankMap');
  if (!planner.ok) return skip(planner.why);
  const reader = await importOptional<{ readFacts: ReadFacts }>('@rankd/topology', 'readFacts');
  if (!reader.ok) return skip(reader.why);
  const dump = listDumps(ctx.repoRoot)?.find((d) => d.tarball === SOURCE_DUMP);
  if (!dump) return skip(`${SOURCE_DUMP} is not in the hwloc corpus (${conformanceDir(ctx.repoRoot)})`);

  const root = await extractDump(ctx.repoRoot, dump, path.join(ctx.tmpDir, 'dumps'));
  const facts = reader.module.readFacts({ root });
  notes.push(
    `Facts of every node: ${dumpName(dump)} read by readFacts (${facts.cpu.pus} PUs, ${facts.cpu.cores} cores, ${facts.numa.nodes.length} NUMA nodes), renamed per node.`,
  );
  const nodes: PlannerNode[] = Array.from({ length: PLAN_NODES }, (_, i) => {
    const name = `node${String(i).padStart(4, '0')}`;
    return { name, address: loopbackAddress(i), facts: { ...facts, host: { ...facts.host, hostname: name } } };
  });
  const spec = { nodes: PLAN_NODES, ranksPerNode: PLAN_RANKS_PER_NODE, masterPort: 29500 };
  notes.push(
    `Spec: ${JSON.stringify(spec)}; nodes are distinct objects, as the controller holds them, not one shared reference.`,
  );

  const planRankMap = planner.module.planRankMap;
  let map: ReturnType<PlanRankMap>;
  try {
    map = planRankMap(nodes, spec);
  } catch (err) {
    return skip(`planRankMap refused the spec: ${(err as Error).message}`);
  }
  const expected = PLAN_NODES * PLAN_RANKS_PER_NODE;
  if (map.worldSize !== expected || map.ranks.length !== expected) {
    return skip(`planRankMap returned ${map.ranks.length} ranks (worldSize ${map.worldSize}), not ${expected}`);
  }
  ctx.log(`plan: ${LABEL}`);
  const samples = await repeat(() => timeCall(() => planRankMap(nodes, spec)), { samples: ctx.rounds * 3, warmup: 2 });
  const stat = summarize(samples);
  const sample = map.ranks[0] as { env?: Record<string, string> } | undefined;
  notes.push(
    `The rank map of one plan: ${(JSON.stringify(map).length / 1e6).toFixed(1)} MB as JSON, ${Object.keys(sample?.env ?? {}).length} environment variables per rank.`,
  );
  const row: Row = { figure: LABEL, rankd: measured('ms', stat), goals: [GOAL] };
  return { rows: [row], notes, limits: limits(stat), peersUsed: [] };
}

function limits(stat: Stat | null): string {
  return [
    'Planning is pure computation over facts already in memory: no I/O, so the bound is CPU and allocation.',
    'Each plan allocates a fresh rank map of 8,192 ranks, each with its CPU lists, NICs and environment, so',
    'garbage collection is a large share of the time and the spread between min and max is mostly collections',
    'and the load of this shared 2-core machine.',
    stat ? `Here the fastest round took ${stat.min.toFixed(1)} ms and the median ${stat.median.toFixed(1)} ms.` : '',
  ]
    .filter(Boolean)
    .join(' ');
}
