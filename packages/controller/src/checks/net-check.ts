// Runs a net check's schedule: round after round, every pair of the round on every rail at
// once, since no node is in two pairs of one round. A node that cannot take part (its agent
// is gone, its probe tool is missing, it has no end on the rail) sits out the rest of the
// check, and its pairs are recorded as failed without being probed, so that the rest
// completes.
import type { NodeProblem, PairProbe } from './link-analysis.js';
import type { PairProber } from './pair-probe.js';
import type { RailPlan } from './rails.js';
import { circleSchedule, type Round } from './round-robin.js';

export interface ScheduleRun {
  probes: PairProbe[];
  problems: Map<string, NodeProblem>;
  rounds: number;
  roundsRun: number;
}

export async function runSchedule(opts: {
  nodes: readonly string[];
  plans: readonly RailPlan[];
  /** Nodes that cannot take part from the start (not connected). */
  problems: Map<string, NodeProblem>;
  probe: PairProber;
  durationS: number;
  /** A preflight runs one round; a full check all of them. */
  maxRounds?: number;
  /** Rounds to run instead of the circle method's (a preflight's recheck), numbered from firstRound. */
  schedule?: readonly Round[];
  firstRound?: number;
  now?: () => number;
}): Promise<ScheduleRun> {
  const { nodes, plans, problems, probe, durationS } = opts;
  const now = opts.now ?? Date.now;
  for (const plan of plans)
    for (const [node, end] of plan.endpoints)
      if ('problem' in end && !problems.has(node)) problems.set(node, { verdict: 'flagged', reason: end.problem });

  const schedule = opts.schedule ?? circleSchedule(nodes.length);
  const roundsRun = Math.min(schedule.length, opts.maxRounds ?? schedule.length);
  const firstRound = opts.firstRound ?? 0;
  const probes: PairProbe[] = [];
  for (let k = 0; k < roundsRun; k++) {
    const round = firstRound + k;
    const startedAt = now();
    const runs = schedule[k]!.flatMap(([i, j]) =>
      plans.map(async (plan): Promise<PairProbe> => {
        const a = nodes[i]!;
        const b = nodes[j]!;
        const base = { rail: plan.rail.name, a, b, round, startedAt };
        const sitting = problems.get(a) ?? problems.get(b);
        if (sitting) {
          const who = problems.has(a) ? a : b;
          return skipped(
            base,
            `not probed: ${who} is ${sitting.verdict === 'unreachable' ? 'unreachable' : 'flagged'}`,
            now(),
          );
        }
        const ea = plan.endpoints.get(a)!;
        const eb = plan.endpoints.get(b)!;
        if ('problem' in ea || 'problem' in eb)
          return skipped(base, 'not probed: a node has no end on this rail', now());
        const m = await probe(plan.rail, { node: a, endpoint: ea }, { node: b, endpoint: eb }, durationS);
        if (m.unreachable !== null && !problems.has(m.unreachable))
          problems.set(m.unreachable, { verdict: 'unreachable', reason: `unreachable during the check: ${m.error}` });
        if (m.broken !== null && !problems.has(m.broken.node))
          problems.set(m.broken.node, { verdict: 'flagged', reason: m.broken.reason });
        return {
          ...base,
          endedAt: now(),
          forwardBps: m.forwardBps,
          reverseBps: m.reverseBps,
          latencyUs: m.latencyUs,
          error: m.error,
        };
      }),
    );
    probes.push(...(await Promise.all(runs)));
  }
  return { probes, problems, rounds: schedule.length, roundsRun };
}

function skipped(
  base: Pick<PairProbe, 'rail' | 'a' | 'b' | 'round' | 'startedAt'>,
  why: string,
  at: number,
): PairProbe {
  return { ...base, endedAt: at, forwardBps: null, reverseBps: null, latencyUs: null, error: why };
}
