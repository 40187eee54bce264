// What a preflight makes of its check, judged on checks made the way the controller makes
// them: the real schedule (one round of the circle method, then the recheck round), the real
// analysis and the real decision, over a modelled fabric whose figures are the namespace
// cluster's (healthy veth links around 3.77 Gbit/s, spread from 40 % to 150 % by the 2 CPUs
// the probes share; a host behind a 200 Mbit/s token bucket measures about 188 Mbit/s).
import t from 'tap';
import type { NetCheckResult } from '@rankd/protocol';
import { analyse } from '#controller/checks/link-analysis';
import type { PairProber } from '#controller/checks/pair-probe';
import { planRails } from '#controller/checks/rails';
import { recheckRound, runWithRecheck } from '#controller/checks/recheck-round';
import { runSchedule } from '#controller/checks/net-check';
import { decidePreflight, unmeasured, type PreflightJob } from '#controller/jobs/preflight-decision';

const HEALTHY_BPS = 3.77e9;
const THROTTLED_BPS = 188e6;
/** The spread of healthy links on the 2-core VM: each pair gets one of these factors. */
const SPREAD = [0.4, 0.7, 1.0, 1.2, 1.5, 0.9, 1.1, 0.6];

const hosts = (n: number) => Array.from({ length: n }, (_, i) => `host${i + 1}`);

/** A fabric where `slowNodes` are throttled and `slowPaths` (pairs) are slow between their two ends only. */
function fabric(slowNodes: readonly string[], slowPaths: ReadonlyArray<[string, string]> = []): PairProber {
  const slowPath = (a: string, b: string) => slowPaths.some(([x, y]) => (x === a && y === b) || (x === b && y === a));
  return async (_rail, a, b) => {
    const throttled = slowNodes.includes(a.node) || slowNodes.includes(b.node) || slowPath(a.node, b.node);
    const factor = SPREAD[(a.node.length * 7 + Number(a.node.slice(4)) * 3 + Number(b.node.slice(4))) % SPREAD.length]!;
    const bps = throttled ? THROTTLED_BPS : HEALTHY_BPS * factor;
    return { forwardBps: bps, reverseBps: bps, latencyUs: 60, error: null, unreachable: null, broken: null };
  };
}

/** A preflight's check of `nodes`, as CheckService.runNet makes it with recheck: true. */
async function preflightCheck(nodes: readonly string[], probe: PairProber, threshold = 0.3): Promise<NetCheckResult> {
  const members = nodes.map((node, i) => ({ node, address: `10.28.0.${i + 1}`, facts: null }));
  const plans = planRails(members, undefined);
  const rails = plans.map((p) => p.rail);
  const problems = new Map();
  const run = await runWithRecheck({ nodes, plans, problems, probe, durationS: 1, maxRounds: 1, rails, threshold });
  const analysis = analyse({ nodes, rails, probes: run.probes, problems: run.problems, threshold });
  const at = Date.parse('2026-11-26T05:00:00Z');
  return {
    id: 'c-test',
    kind: 'net',
    startedAt: at,
    endedAt: at + 2000,
    by: null,
    pattern: nodes.join(','),
    durationS: 1,
    threshold,
    rounds: run.rounds,
    roundsRun: run.roundsRun,
    ...analysis,
    drained: [],
    message: null,
  };
}

const job = (planned: readonly string[], over: Partial<PreflightJob> = {}): PreflightJob => ({
  planned,
  nodelist: false,
  placeWithout: () => null,
  ...over,
});

t.test(
  '-N 5 on six hosts: the throttled host1 sits out the round (five nodes, a bye) and the recheck finds it',
  async (t) => {
    const planned = hosts(5);
    const result = await preflightCheck(planned, fabric(['host1']));
    t.equal(result.roundsRun, 2, 'the round, then the recheck');
    t.same(
      result.links
        .filter((l) => l.round === 0)
        .flatMap((l) => [l.src, l.dst])
        .includes('host1'),
      false,
      'the first round did not measure host1: five nodes, and it had the bye',
    );
    t.same(result.flagged, ['host1'], 'host1 alone is flagged');
    let asked: readonly string[] = [];
    const decision = decidePreflight(result, job(planned, { placeWithout: (n) => ((asked = n), null) }));
    t.same(asked, ['host1'], 'the placement is asked about host1');
    t.match(decision, { action: 'leave-out', nodes: ['host1'] });
    t.match(
      decision.note,
      new RegExp(
        '^preflight: host1 left out: 1 of 1 links flagged: host(1→host\\d|\\d→host1) 188 Mbit/s, ' +
          '\\d+ % of the tcp median [\\d.]+ Gbit/s; planning again without it \\(check c-test\\)$',
      ),
      decision.note,
    );
  },
);

t.test(
  'six nodes: the round pairs host1 with a good host, both look slow, and the recheck tells them apart',
  async (t) => {
    const planned = hosts(6);
    const probe = fabric(['host1']);
    // the first round alone, analysed as a one-round check would be: a tie
    const members = planned.map((node, i) => ({ node, address: `10.28.0.${i + 1}`, facts: null }));
    const plans = planRails(members, undefined);
    const one = await runSchedule({ nodes: planned, plans, problems: new Map(), probe, durationS: 1, maxRounds: 1 });
    const rails = plans.map((p) => p.rail);
    const first = analyse({ nodes: planned, rails, probes: one.probes, problems: one.problems, threshold: 0.3 });
    t.equal(first.flagged.length, 2, `one round flags host1 and its partner alike: ${first.flagged.join(', ')}`);
    t.ok(first.flagged.includes('host1'));

    const result = await preflightCheck(planned, probe);
    const recheck = result.links.filter((l) => l.round === 1);
    t.equal(recheck.length, 4, 'the recheck probed two pairs, both ways: each suspect against a healthy node');
    t.same(result.flagged, ['host1'], 'after the recheck only host1 is flagged');
    const partner = first.flagged.find((n) => n !== 'host1')!;
    const verdict = result.nodes.find((v) => v.node === partner)!;
    t.equal(verdict.verdict, 'ok', `${partner} is ok`);
    t.match(verdict.reason, /flagged link to flagged host1/, 'and its slow link is explained by host1');
    t.match(decidePreflight(result, job(planned)), { action: 'leave-out', nodes: ['host1'] });
  },
);

t.test(
  '--nodelist host1,host2 with host3 and host4 as referees: host1 is found, and the job fails naming it',
  async (t) => {
    const planned = ['host1', 'host2'];
    const result = await preflightCheck([...planned, 'host3', 'host4'], fabric(['host1']));
    t.equal(result.roundsRun, 2, 'the round, then the recheck of its suspects');
    t.same(result.flagged, ['host1'], 'host1 alone is flagged; its first partner is cleared by the recheck');
    let asked = false;
    const decision = decidePreflight(
      result,
      job(planned, { nodelist: true, placeWithout: () => ((asked = true), null) }),
    );
    t.equal(decision.action, 'fail');
    t.notOk(asked, 'a job that names its nodes is not replanned');
    t.match(decision.note, /^preflight: host1 flagged: 2 of 2 links flagged: host1→host\d 188 Mbit\/s/);
    t.match(
      decision.note,
      /the job names its nodes \(--nodelist\), so none can be left out \(check c-test\) \(RANKD_PREFLIGHT_FAILED\)$/,
    );
  },
);

t.test('a referee that is slow is measured but never judged for the job', async (t) => {
  const planned = ['host1', 'host2'];
  const result = await preflightCheck([...planned, 'host3', 'host4'], fabric(['host4']));
  t.same(result.flagged, ['host4'], 'the check flags the slow referee');
  t.match(decidePreflight(result, job(planned)), { action: 'pass' }, 'the job, on host1 and host2, passes');
});

t.test('a lone pair (no other ready node to referee) is its own median: not judged, and said so', async (t) => {
  const planned = ['host1', 'host2'];
  const result = await preflightCheck(planned, fabric(['host1']));
  t.same(result.flagged, [], 'a single link cannot fall below its own median');
  t.same(decidePreflight(result, job(planned)), {
    action: 'pass',
    note:
      'preflight: host1, host2 not judged: a single pair is its own median, and no other ready node could ' +
      'referee (check c-test); starting',
  });
});

t.test('a job that cannot run without the flagged node fails with the placement reason', async (t) => {
  const planned = hosts(6);
  const result = await preflightCheck(planned, fabric(['host1']));
  const decision = decidePreflight(
    result,
    job(planned, { placeWithout: () => 'needs 6 nodes with 1 core each; 5 have room now' }),
  );
  t.equal(decision.action, 'fail');
  t.match(
    decision.note,
    new RegExp(
      '^preflight: host1 flagged: .*; the job cannot be placed without it: needs 6 nodes with 1 core each; ' +
        '5 have room now \\(check c-test\\) \\(RANKD_PREFLIGHT_FAILED\\)$',
    ),
  );
});

t.test('healthy links spread from 40 % to 150 % pass at threshold 0.3', async (t) => {
  const planned = hosts(5);
  const result = await preflightCheck(planned, fabric([]));
  t.same(result.flagged, []);
  t.equal(result.roundsRun, 2, 'the odd node out is still measured, in the recheck');
  const decision = decidePreflight(result, job(planned));
  t.equal(decision.action, 'pass');
  t.match(
    decision.note,
    new RegExp(
      '^preflight: host1, host2, host3, host4, host5 passed ' +
        '\\(check c-test: 6 directions measured, tcp median [\\d.]+ Gbit/s\\)$',
    ),
  );
});

t.test('a slow path between two good nodes: the recheck clears both ends, and the job runs', async (t) => {
  const planned = hosts(6);
  // the circle's first round pairs host1 with host6
  const result = await preflightCheck(planned, fabric([], [['host1', 'host6']]));
  t.same(result.flagged, [], 'neither end is flagged: each is fast to its referee');
  t.ok(
    result.links.some((l) => l.flagged && l.src === 'host1' && l.dst === 'host6'),
    'the slow link itself stays flagged in the stored check',
  );
  t.equal(decidePreflight(result, job(planned)).action, 'pass');
});

t.test('more suspects than healthy nodes: each healthy node referees one suspect, in node order', async (t) => {
  const nodes = hosts(5);
  const verdicts = [
    { node: 'host1', verdict: 'flagged', reason: 'slow' },
    { node: 'host2', verdict: 'flagged', reason: 'slow' },
    { node: 'host3', verdict: 'ok', reason: null },
    { node: 'host4', verdict: 'flagged', reason: 'slow' },
    { node: 'host5', verdict: 'unreachable', reason: 'gone' },
  ];
  const problems = new Map([['host5', { verdict: 'unreachable' as const, reason: 'gone' }]]);
  const measured = new Set(['host1', 'host2', 'host3', 'host4']);
  t.same(recheckRound(nodes, verdicts, problems, measured), [[0, 2]], 'host3 referees host1; host2, host4 keep theirs');
});

t.test('a check that could not run fails the job with why', async (t) => {
  const d = unmeasured('a check is already measuring host3; wait for it to end (RANKD_CHECK_BUSY)');
  t.same(d, {
    action: 'fail',
    note:
      "preflight: could not measure the job's nodes: a check is already measuring host3; wait for it to end " +
      '(RANKD_CHECK_BUSY) (RANKD_PREFLIGHT_FAILED)',
  });
});
