// parseSince is one rule on both sides: GET /v1/audit?since= and `rankd audit --since`
// (the CLI checks it before it asks, and sends the ISO time it stands for).
import t from 'tap';
import { parseSince } from '@rankd/protocol/duration';
import { PLACEMENT, PRIORITY, withinBounds } from '@rankd/protocol/limits';
import { PlacementSpec, MAX_PRIORITY, MIN_PRIORITY } from '@rankd/protocol';

const now = Date.parse('2026-11-25T20:00:00.000Z');

t.test('a duration back from now, an ISO time, or epoch milliseconds', async (t) => {
  t.equal(parseSince('2h', now), now - 2 * 3600_000);
  t.equal(parseSince('30s', now), now - 30_000);
  t.equal(parseSince('15m', now), now - 15 * 60_000);
  t.equal(parseSince('1d', now), now - 86_400_000);
  t.equal(parseSince('1.5h', now), now - 5_400_000);
  t.equal(parseSince('2026-11-25T18:00:00Z', now), Date.parse('2026-11-25T18:00:00Z'));
  t.equal(parseSince('2026-11-25T18:00:00.250+01:00', now), Date.parse('2026-11-25T17:00:00.250Z'));
  t.equal(parseSince('2026-11-25', now), Date.parse('2026-11-25'));
  t.equal(parseSince('1795600000000', now), 1795600000000, 'digits alone are epoch milliseconds, not seconds ago');
});

t.test('anything else is NaN, never a guess', async (t) => {
  for (const bad of ['2x', '', 'h', '-2h', '2 h', 'yesterday', 'June 1', 'Tue Nov 25 2026', '2026-11-25T18', '1e3']) {
    t.ok(Number.isNaN(parseSince(bad, now)), JSON.stringify(bad));
  }
});

t.test('the REST schemas are built from the same bounds the CLI checks', async (t) => {
  t.equal(MIN_PRIORITY, PRIORITY.min);
  t.equal(MAX_PRIORITY, PRIORITY.max);
  const ntasks = PlacementSpec.properties.ntasks as unknown as { minimum: number; maximum: number };
  t.same([ntasks.minimum, ntasks.maximum], [PLACEMENT.ntasks.min, PLACEMENT.ntasks.max]);
  t.ok(withinBounds(1, PLACEMENT.ntasks) && !withinBounds(0, PLACEMENT.ntasks));
  t.notOk(withinBounds(0, { min: 0, max: 10, minExclusive: true }), 'an exclusive minimum refuses itself');
});
