// The A/B runner. Sides take turns (A, B, A, B, …) instead of running in blocks, so that
// whatever drifts during a run — page cache, CPU frequency, a neighbour's compile — lands on
// both sides alike, and ratios are taken within a round.
import { pairedRatios, summarize, type Stat } from './stats.js';

export const MIN_ROUNDS = 7;

export interface Arm {
  name: string;
  /** One measurement, in the arm's unit. Throwing removes the arm from the run, with the reason. */
  sample: () => Promise<number>;
}

export interface ArmResult {
  name: string;
  /** One per round, in round order; empty when the arm failed. */
  samples: number[];
  stat: Stat | null;
  /** Why the arm has no figure: its warm-up or a round failed. */
  error?: string;
}

export interface InterleaveResult {
  rounds: number;
  arms: ArmResult[];
}

export interface InterleaveOptions {
  rounds: number;
  /** Unmeasured turns per arm before round one: loads code and caches, and proves the arm works. */
  warmup?: number;
  log?: (message: string) => void;
}

export async function interleave(arms: readonly Arm[], opts: InterleaveOptions): Promise<InterleaveResult> {
  const rounds = Math.max(MIN_ROUNDS, Math.floor(opts.rounds));
  const warmup = opts.warmup ?? 1;
  const results: ArmResult[] = arms.map((a) => ({ name: a.name, samples: [], stat: null }));
  const live = new Set(arms.map((_, i) => i));

  const turn = async (i: number, counted: boolean): Promise<void> => {
    const arm = arms[i]!;
    try {
      const value = await arm.sample();
      if (!Number.isFinite(value)) throw new Error(`sample is not a number: ${value}`);
      if (counted) results[i]!.samples.push(value);
    } catch (err) {
      live.delete(i);
      results[i]!.samples = [];
      results[i]!.error = (err as Error).message;
      opts.log?.(`  ${arm.name}: dropped: ${(err as Error).message}`);
    }
  };

  for (let w = 0; w < warmup; w++) {
    for (let i = 0; i < arms.length; i++) if (live.has(i)) await turn(i, false);
  }
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < arms.length; i++) if (live.has(i)) await turn(i, true);
    opts.log?.(
      `  round ${r + 1}/${rounds}: ${arms
        .map((a, i) => `${a.name} ${live.has(i) ? round3(results[i]!.samples[r]) : '—'}`)
        .join(', ')}`,
    );
  }
  for (const res of results) if (res.samples.length > 0) res.stat = summarize(res.samples);
  return { rounds, arms: results };
}

/** rankd ÷ peer, round by round; undefined unless both arms finished every round. */
export function ratioOf(result: InterleaveResult, numerator: string, denominator: string): Stat | undefined {
  const a = result.arms.find((x) => x.name === numerator);
  const b = result.arms.find((x) => x.name === denominator);
  if (!a?.stat || !b?.stat || a.samples.length !== b.samples.length) return undefined;
  return pairedRatios(a.samples, b.samples);
}

/** Repeated samples of one side that has no peer (in-process figures). */
export async function repeat(
  sample: () => Promise<number> | number,
  opts: { samples: number; warmup?: number },
): Promise<number[]> {
  for (let i = 0; i < (opts.warmup ?? 1); i++) await sample();
  const out: number[] = [];
  for (let i = 0; i < Math.max(MIN_ROUNDS, opts.samples); i++) out.push(await sample());
  return out;
}

function round3(x: number | undefined): string {
  return x === undefined ? '—' : Number(x.toPrecision(3)).toString();
}
