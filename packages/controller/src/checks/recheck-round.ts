// A preflight's second look. One round of the circle method pairs each node with a single
// peer, so a slow node and its partner look alike (each has one link, and it is slow: the
// analysis flags both), and with an odd number of nodes one of them sits the round out
// unmeasured. The recheck probes each such suspect once more, against a node the first round
// found healthy, in one more round; the analysis over both rounds then tells the slow end from
// its partner (the slow one is slow twice), and a slow path between two good nodes from both.
import { analyse, type NodeProblem, type RailInfo } from './link-analysis.js';
import { runSchedule, type ScheduleRun } from './net-check.js';
import type { Round } from './round-robin.js';

type ScheduleOptions = Parameters<typeof runSchedule>[0];

/**
 * The rounds of `opts` (a preflight runs one), then, when they left suspects, the recheck
 * round: one check, analysed as a whole by the caller.
 */
export async function runWithRecheck(
  opts: ScheduleOptions & { rails: readonly RailInfo[]; threshold: number },
): Promise<ScheduleRun> {
  const first = await runSchedule(opts);
  if (first.roundsRun === 0) return first;
  const { nodes, rails, threshold } = opts;
  const seen = analyse({ nodes, rails, probes: first.probes, problems: first.problems, threshold });
  const round = recheckRound(nodes, seen.nodes, first.problems, measuredNodes(first));
  if (round.length === 0) return first;
  const again = await runSchedule({
    ...opts,
    problems: first.problems,
    schedule: [round],
    firstRound: first.roundsRun,
  });
  return {
    probes: [...first.probes, ...again.probes],
    problems: again.problems,
    rounds: first.rounds,
    roundsRun: first.roundsRun + again.roundsRun,
  };
}

/**
 * Each suspect paired with its own healthy node, in node order, as indices into `nodes`.
 * Suspects: nodes flagged by their links, and nodes no probe measured (the odd one out).
 * Healthy: measured, ok, and without a single slow link. A node that cannot take part at all
 * (unreachable, tool missing) is no suspect: probing it again would fail again. When there
 * are more suspects than healthy nodes, the last suspects keep the first round's verdict.
 */
export function recheckRound(
  nodes: readonly string[],
  verdicts: ReadonlyArray<{ node: string; verdict: string; reason: string | null }>,
  problems: ReadonlyMap<string, NodeProblem>,
  measured: ReadonlySet<string>,
): Round {
  const suspects: number[] = [];
  const healthy: number[] = [];
  const verdictOf = new Map(verdicts.map((v) => [v.node, v]));
  nodes.forEach((node, i) => {
    const v = verdictOf.get(node);
    if (!v || problems.has(node)) return;
    if (v.verdict === 'flagged' || !measured.has(node)) suspects.push(i);
    else if (v.verdict === 'ok' && v.reason === null) healthy.push(i);
  });
  const round: Round = [];
  for (let k = 0; k < Math.min(suspects.length, healthy.length); k++) {
    const [a, b] = [healthy[k]!, suspects[k]!];
    round.push(a < b ? [a, b] : [b, a]);
  }
  return round;
}

/** Nodes with at least one direction measured (no error). */
function measuredNodes(run: ScheduleRun): Set<string> {
  const out = new Set<string>();
  for (const p of run.probes) {
    if (p.error !== null) continue;
    if (p.forwardBps !== null || p.reverseBps !== null || p.latencyUs !== null) out.add(p.a).add(p.b);
  }
  return out;
}
