// The circle method's schedule, checked exhaustively for every cluster size a test cluster
// and a small fleet have, and for 512 (the bench's simulated fleet): N−1 rounds for even N
// and N for odd N, every pair in exactly one round, and no node in two pairs of a round.
import t from 'tap';
import { circleSchedule, roundCount } from '#controller/checks/round-robin';

const SIZES = [...Array.from({ length: 39 }, (_, i) => i + 2), 512];

for (const n of SIZES) {
  t.test(`${n} nodes`, async (t) => {
    const rounds = circleSchedule(n);
    t.equal(roundCount(n), n % 2 === 0 ? n - 1 : n, 'roundCount: N−1 for even N, N for odd N');
    t.equal(rounds.length, roundCount(n), 'the schedule has roundCount(n) rounds');

    const seen = new Map<string, number>();
    const problems: string[] = [];
    rounds.forEach((round, r) => {
      const busy = new Set<number>();
      // every round but the bye's idle node is full: N/2 pairs, (N−1)/2 for odd N
      if (round.length !== Math.floor(n / 2)) problems.push(`round ${r} has ${round.length} pairs`);
      for (const [a, b] of round) {
        if (!(a >= 0 && b < n && a < b)) problems.push(`round ${r}: bad pair ${a},${b}`);
        for (const x of [a, b]) {
          if (busy.has(x)) problems.push(`round ${r}: node ${x} is in two pairs`);
          busy.add(x);
        }
        const key = `${a}-${b}`;
        if (seen.has(key)) problems.push(`pair ${key} in rounds ${seen.get(key)} and ${r}`);
        seen.set(key, r);
      }
    });
    t.same(problems, [], 'no node twice in a round, no pair twice, every pair ordered and in range');
    t.equal(seen.size, (n * (n - 1)) / 2, 'every pair of the N(N−1)/2 is in the schedule');
  });
}

t.test('fewer than two nodes: nothing to schedule', async (t) => {
  for (const n of [0, 1]) {
    t.equal(roundCount(n), 0);
    t.same(circleSchedule(n), []);
  }
});
