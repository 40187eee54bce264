// Summaries of repeated samples. Medians, not means: one slow round (a page-cache miss,
// a scheduler hiccup on a 2-core box) must not move the figure.

export interface Stat {
  median: number;
  min: number;
  max: number;
  /** How many samples the summary is made of. */
  n: number;
}

export function summarize(samples: readonly number[]): Stat {
  if (samples.length === 0) throw new RangeError('summarize: no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    median: quantileOfSorted(sorted, 0.5),
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    n: sorted.length,
  };
}

/** Linear interpolation between closest ranks, so the median of an even count is the mean of the middle two. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) throw new RangeError('quantile: no samples');
  return quantileOfSorted(
    [...samples].sort((a, b) => a - b),
    q,
  );
}

function quantileOfSorted(sorted: readonly number[], q: number): number {
  const pos = (sorted.length - 1) * Math.min(1, Math.max(0, q));
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (pos - lo);
}

/**
 * Ratios taken round by round (a[i] / b[i]) and then summarized. Pairing the two sides of the
 * same round cancels drift that affects both (thermal state, a neighbour's build), which a
 * ratio of two medians would not.
 */
export function pairedRatios(a: readonly number[], b: readonly number[]): Stat {
  if (a.length !== b.length) throw new RangeError(`pairedRatios: ${a.length} vs ${b.length} samples`);
  const ratios: number[] = [];
  for (let i = 0; i < a.length; i++) {
    const den = b[i]!;
    if (den > 0) ratios.push(a[i]! / den);
  }
  return summarize(ratios);
}
