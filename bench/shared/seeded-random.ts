// Shared by the bench (figures/schedule.ts) and the tests (queue/property.test.ts). In
// bench/shared because the bench, built to bench/dist with rootDir bench/, can import nothing
// outside bench/, while tests run from source and may import any file. No imports at all,
// so nothing of bench/lib or test/helpers comes with it.

/**
 * mulberry32: a small seeded generator of numbers in [0, 1). The same seed gives the same
 * sequence, so a figure's job mix is the same in every run and a failing property test's
 * mix can be replayed from its seed.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), a | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
