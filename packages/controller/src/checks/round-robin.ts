// The pairing schedule of a check: the circle method of round-robin tournaments. One node
// stays put while the others rotate past it, so each round pairs every node with a
// different partner and no node is in two probes at once. N nodes take N−1 rounds of N/2
// pairs when N is even; when N is odd a "bye" makes it even, and each round one node rests
// (N rounds). Every pair meets exactly once.

/** One round: disjoint pairs of indices into the node list. */
export type Round = Array<[number, number]>;

/** Rounds the circle method needs for `n` nodes. */
export function roundCount(n: number): number {
  if (n < 2) return 0;
  return n % 2 === 0 ? n - 1 : n;
}

export function circleSchedule(n: number): Round[] {
  if (n < 2) return [];
  const BYE = -1;
  const ring = Array.from({ length: n % 2 === 0 ? n : n + 1 }, (_, i) => (i < n ? i : BYE));
  const size = ring.length;
  const rounds: Round[] = [];
  for (let r = 0; r < size - 1; r++) {
    const round: Round = [];
    for (let i = 0; i < size / 2; i++) {
      const a = ring[i]!;
      const b = ring[size - 1 - i]!;
      if (a !== BYE && b !== BYE) round.push(a < b ? [a, b] : [b, a]);
    }
    rounds.push(round);
    // keep ring[0], rotate the rest one place clockwise
    ring.splice(1, 0, ring.pop()!);
  }
  return rounds;
}
