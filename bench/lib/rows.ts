// From interleaved samples to table rows: each side is either its summary or the reason
// it has none (never run, or dropped after an error), and the ratio is paired per round.
import { measured, notMeasured, type Goal, type Row, type Side } from './figure.js';
import { interleave, ratioOf, type Arm, type InterleaveResult } from './interleave.js';

/** An arm to measure, or the reason it cannot be. */
export type Candidate = Arm | { name: string; unavailable: string };

export interface Comparison {
  result: InterleaveResult;
  unavailable: Map<string, string>;
  unit: string;
  higherIsBetter: boolean;
}

export async function compareArms(
  candidates: readonly Candidate[],
  opts: { rounds: number; unit: string; higherIsBetter?: boolean; warmup?: number; log?: (m: string) => void },
): Promise<Comparison> {
  const unavailable = new Map<string, string>();
  const arms: Arm[] = [];
  for (const c of candidates) {
    if ('unavailable' in c) unavailable.set(c.name, c.unavailable);
    else arms.push(c);
  }
  const result = await interleave(arms, {
    rounds: opts.rounds,
    ...(opts.warmup !== undefined ? { warmup: opts.warmup } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  return { result, unavailable, unit: opts.unit, higherIsBetter: opts.higherIsBetter ?? false };
}

export function sideOf(c: Comparison, name: string): Side {
  const why = c.unavailable.get(name);
  if (why) return notMeasured(why);
  const arm = c.result.arms.find((a) => a.name === name);
  if (!arm) return notMeasured('not part of this run');
  if (!arm.stat) return notMeasured(`failed: ${arm.error ?? 'no samples'}`);
  return measured(c.unit, arm.stat, c.higherIsBetter);
}

export function comparisonRow(
  c: Comparison,
  figure: string,
  rankdArm: string,
  peer: { arm: string; label: string } | null,
  goals: Goal[],
): Row {
  const row: Row = { figure, rankd: sideOf(c, rankdArm), goals };
  if (peer) {
    row.peer = { name: peer.label, side: sideOf(c, peer.arm) };
    const ratio = ratioOf(c.result, rankdArm, peer.arm);
    if (ratio) row.ratio = ratio;
  }
  return row;
}
