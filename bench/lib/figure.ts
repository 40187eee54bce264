// The shape every figure module fills in, and the verdict on its goals.
// A figure measures; the results writer only renders. Keeping the verdict here, next to
// the goal's definition, means the table can never disagree with the numbers.
import type { Stat } from './stats.js';

export type Comparison = '<' | '<=' | '>=' | '>';

/**
 * A goal is checked against the median of one side: the rankd measure itself
 * ("< 5 ms") or the paired ratio rankd ÷ peer ("≤ 1× lstopo").
 */
export interface Goal {
  on: 'rankd' | 'ratio';
  op: Comparison;
  value: number;
  /** Shown in the goal column, e.g. "≤ 1× lstopo". */
  text: string;
}

export interface Measure {
  /** ms, MB, %, lines/s … — every sample of a measure has one unit. */
  unit: string;
  stat: Stat;
  /** Higher is better for throughput; it only changes how a gap is worded. */
  higherIsBetter?: boolean;
}

/** One side of a row: a measure, or the plain reason it was not taken. */
export type Side = { measure: Measure } | { notMeasured: string };

export interface Row {
  /** What the row measures, e.g. "facts, whole process". */
  figure: string;
  rankd: Side;
  /** Absent for figures that have no peer. */
  peer?: { name: string; side: Side };
  /** rankd ÷ peer, round by round; present only when both sides were measured. */
  ratio?: Stat;
  goals: Goal[];
}

export interface FigureReport {
  rows: Row[];
  /** A short paragraph: what bounds each number on this machine. */
  limits: string;
  /** Extra facts a reader needs: processes and connections used, dumps picked, skipped peers. */
  notes: string[];
  /** Peers this figure ran, by name; their versions go into the report header. */
  peersUsed: string[];
}

export interface BenchContext {
  repoRoot: string;
  /** A scratch directory owned by this run, removed at the end. */
  tmpDir: string;
  /** Interleaved rounds per comparison (never fewer than 7). */
  rounds: number;
  log(message: string): void;
}

export interface FigureDescriptor {
  name: string;
  title: string;
  /** Debian peers this figure compares against; the runner installs them first. */
  peers: ReadonlyArray<PeerCommand>;
  run(ctx: BenchContext): Promise<FigureReport>;
}

/** Named as the command is (mpirun is Open MPI's mpirun.openmpi; see peers/install.ts). */
export type PeerCommand =
  'lstopo' | 'mpirun.openmpi' | 'mpiexec.hydra' | 'mpicc.openmpi' | 'srun' | 'ansible' | 'torchrun';

export type Verdict =
  { kind: 'met' } | { kind: 'missed'; gap: string } | { kind: 'not-measured' } | { kind: 'no-goal' };

export function measured(unit: string, stat: Stat, higherIsBetter = false): Side {
  return { measure: { unit, stat, ...(higherIsBetter ? { higherIsBetter } : {}) } };
}

export function notMeasured(why: string): Side {
  return { notMeasured: why };
}

function compare(value: number, op: Comparison, bound: number): boolean {
  switch (op) {
    case '<':
      return value < bound;
    case '<=':
      return value <= bound;
    case '>=':
      return value >= bound;
    case '>':
      return value > bound;
  }
}

/** Every goal of a row must hold; a miss names each failed goal with the measured value and gap. */
export function judge(row: Row): Verdict {
  if (row.goals.length === 0) return { kind: 'no-goal' };
  const gaps: string[] = [];
  for (const goal of row.goals) {
    let value: number;
    let unit: string;
    if (goal.on === 'rankd') {
      if (!('measure' in row.rankd)) return { kind: 'not-measured' };
      value = row.rankd.measure.stat.median;
      unit = ` ${row.rankd.measure.unit}`;
    } else {
      if (!row.ratio) return { kind: 'not-measured' };
      value = row.ratio.median;
      unit = '×';
    }
    if (compare(value, goal.op, goal.value)) continue;
    const gap = goal.on === 'ratio' ? value / goal.value : value - goal.value;
    gaps.push(
      goal.on === 'ratio'
        ? `${formatNumber(value)}${unit} against ${goal.text} (${formatNumber(gap)}× the bound)`
        : `${formatNumber(value)}${unit} against ${goal.text} (off by ${formatNumber(Math.abs(gap))}${unit})`,
    );
  }
  return gaps.length === 0 ? { kind: 'met' } : { kind: 'missed', gap: gaps.join('; ') };
}

/** Three significant digits, no exponent for everyday magnitudes, thousands grouped. */
export function formatNumber(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const abs = Math.abs(x);
  if (abs >= 1000) return Math.round(x).toLocaleString('en-US');
  if (abs >= 100) return x.toFixed(0);
  if (abs >= 10) return x.toFixed(1);
  if (abs >= 1) return x.toFixed(2);
  if (abs === 0) return '0';
  return x.toPrecision(2);
}
