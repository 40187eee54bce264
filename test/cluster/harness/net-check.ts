// A stored `rankd check net` result as the tests read it, and the schedule's invariants
// checked from it: the probes' own rounds and times, not the controller's word for them.

export interface Link {
  rail: string;
  src: string;
  dst: string;
  round: number;
  startedAt: number;
  endedAt: number;
  bandwidthBps: number | null;
  error: string | null;
  flagged: boolean;
  why: string | null;
}

export interface NetCheck {
  id: string;
  pattern: string;
  rounds: number;
  roundsRun: number;
  flagged: string[];
  drained: string[];
  links: Link[];
  nodes: Array<{ node: string; verdict: string; reason: string | null }>;
  message: string | null;
}

/** One probe: both directions of a pair, run once. */
export interface Probe {
  a: string;
  b: string;
  round: number;
  startedAt: number;
  endedAt: number;
}

const pairKey = (x: string, y: string): string => (x < y ? `${x}|${y}` : `${y}|${x}`);

/** The probes behind a result's links; a pair whose two directions disagree on when it ran is a problem. */
export function probesOf(result: NetCheck): { probes: Probe[]; problems: string[] } {
  const byPair = new Map<string, Link[]>();
  for (const l of result.links) {
    const key = `${l.rail}|${pairKey(l.src, l.dst)}`;
    byPair.set(key, [...(byPair.get(key) ?? []), l]);
  }
  const probes: Probe[] = [];
  const problems: string[] = [];
  for (const [key, links] of byPair) {
    const [one, other] = links;
    if (links.length !== 2 || one!.src !== other!.dst || one!.dst !== other!.src) {
      problems.push(`${key}: ${links.length} links, not the two directions of one probe`);
      continue;
    }
    if (one!.round !== other!.round || one!.startedAt !== other!.startedAt || one!.endedAt !== other!.endedAt)
      problems.push(`${key}: the two directions ran at different times`);
    probes.push({ a: one!.src, b: one!.dst, round: one!.round, startedAt: one!.startedAt, endedAt: one!.endedAt });
  }
  return { probes, problems };
}

/**
 * What is wrong with the schedule a result records, for `nodes` on one rail: every unordered
 * pair probed exactly once, `expectedRounds` rounds numbered 0…, no node in two pairs of a
 * round, and no node in two probes whose [startedAt, endedAt] overlap.
 */
export function scheduleProblems(result: NetCheck, nodes: readonly string[], expectedRounds: number): string[] {
  const { probes, problems } = probesOf(result);
  const seen = new Map<string, number>();
  for (const p of probes) seen.set(pairKey(p.a, p.b), (seen.get(pairKey(p.a, p.b)) ?? 0) + 1);
  for (let i = 0; i < nodes.length; i++)
    for (let j = i + 1; j < nodes.length; j++) {
      const n = seen.get(pairKey(nodes[i]!, nodes[j]!)) ?? 0;
      if (n !== 1) problems.push(`${nodes[i]}–${nodes[j]} probed ${n} times`);
    }
  for (const key of seen.keys())
    if (!key.split('|').every((n) => nodes.includes(n))) problems.push(`${key} is not a pair of the selected nodes`);

  const rounds = [...new Set(probes.map((p) => p.round))].sort((x, y) => x - y);
  if (rounds.join(',') !== Array.from({ length: expectedRounds }, (_, i) => i).join(','))
    problems.push(`rounds ${rounds.join(',')}, expected 0…${expectedRounds - 1}`);
  for (const r of rounds) {
    const ends = probes.filter((p) => p.round === r).flatMap((p) => [p.a, p.b]);
    const twice = ends.filter((n, i) => ends.indexOf(n) !== i);
    if (twice.length > 0) problems.push(`round ${r}: ${twice.join(', ')} in two pairs`);
  }
  for (const node of nodes) {
    const own = probes.filter((p) => p.a === node || p.b === node).sort((x, y) => x.startedAt - y.startedAt);
    for (let i = 1; i < own.length; i++)
      if (own[i]!.startedAt < own[i - 1]!.endedAt)
        problems.push(
          `${node}: probe ${own[i - 1]!.a}–${own[i - 1]!.b} (${own[i - 1]!.startedAt}…${own[i - 1]!.endedAt}) ` +
            `overlaps ${own[i]!.a}–${own[i]!.b} (${own[i]!.startedAt}…${own[i]!.endedAt})`,
        );
  }
  return problems;
}
