// The largest machines in hwloc's corpus (256 CPUs), read in-process against this machine,
// interleaved. The goal (≤ 10×) asks that the reader grow with the machine, not with the
// square of it: 256 CPUs is 128× this 2-CPU box.
import path from 'node:path';
import { timeCall } from '../lib/clock.js';
import { conformanceDir, dumpName, extractDump, listDumps, type Dump } from '../lib/conformance.js';
import { notMeasured, type BenchContext, type Goal, type Row } from '../lib/figure.js';
import { compareArms, comparisonRow } from '../lib/rows.js';
import type { ReadFacts } from './facts.js';

export const BIG_DUMP_PUS = 256;
const GOAL: Goal = { on: 'ratio', op: '<=', value: 10, text: '≤ 10× this machine' };
const LIVE = 'readFacts, this machine';

function pus(d: Dump): number {
  return Math.max(d.allowed?.pus ?? 0, d.disallowed?.pus ?? 0);
}

export async function measureDumps(
  ctx: BenchContext,
  readFacts: ReadFacts | null,
  whyNot: string | null,
): Promise<{ rows: Row[]; notes: string[] }> {
  const dumps = listDumps(ctx.repoRoot);
  if (!dumps) {
    const why = `the hwloc corpus is absent (${conformanceDir(ctx.repoRoot)})`;
    return {
      rows: [{ figure: `facts in-process, ${BIG_DUMP_PUS}-CPU dumps`, rankd: notMeasured(why), goals: [GOAL] }],
      notes: [],
    };
  }
  const big = dumps.filter((d) => pus(d) >= BIG_DUMP_PUS);
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const dump of big) {
    const label = `facts in-process, ${dumpName(dump)} dump (${pus(dump)} PUs)`;
    if (!readFacts) {
      rows.push({ figure: label, rankd: notMeasured(whyNot ?? 'no reader'), goals: [GOAL] });
      continue;
    }
    let root: string;
    try {
      root = await extractDump(ctx.repoRoot, dump, path.join(ctx.tmpDir, 'dumps'));
    } catch (err) {
      rows.push({ figure: label, rankd: notMeasured(`extraction failed: ${(err as Error).message}`), goals: [GOAL] });
      continue;
    }
    // What the reader saw, next to what hwloc reports: a fast reader that misreads is no result.
    try {
      const facts = readFacts({ root });
      notes.push(
        `${dumpName(dump)}: read ${facts.cpu.pus} allowed PUs, ${facts.cpu.cores} cores, ${facts.numa.nodes.length} NUMA nodes (hwloc: ${dump.allowed?.pus ?? '?'} PUs, ${dump.allowed?.cores ?? '?'} cores, ${dump.allowed?.numaNodes ?? '?'} NUMA nodes).`,
      );
    } catch (err) {
      rows.push({
        figure: label,
        rankd: notMeasured(`readFacts failed on the dump: ${(err as Error).message}`),
        goals: [GOAL],
      });
      continue;
    }
    ctx.log(`facts: ${dumpName(dump)} against this machine, interleaved`);
    const c = await compareArms(
      [
        { name: label, sample: () => timeCall(() => readFacts({ root })) },
        { name: LIVE, sample: () => timeCall(() => readFacts({ root: '/' })) },
      ],
      { rounds: ctx.rounds * 3, unit: 'ms', warmup: 3, log: ctx.log },
    );
    rows.push(comparisonRow(c, label, label, { arm: LIVE, label: LIVE }, [GOAL]));
  }
  if (big.length === 0) notes.push(`No dump in the corpus has ${BIG_DUMP_PUS} PUs or more.`);
  return { rows, notes };
}
