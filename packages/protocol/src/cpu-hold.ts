// The line that tells a user what their job holds, and by which CPUs-per-rank rule:
// `holds 2 of 2 cores on vm (share: -c 1 to ask for fewer)`, `holds 1 of 64 cores on gpu01
// (site default 1 per rank: up to -c 64 for more)`. `rankd run` prints it under its header
// and `rankd plan` after the map, so the rule is never a surprise; the hint is a flag to
// paste. Schema-free, like the rank map table, so `rankd run` does not load TypeBox.
import type { RankMap, RankMapNode, RankCpuPolicy } from './plan.js';

/** Groups of nodes shown before the rest is counted. */
const MAX_GROUPS = 3;
const MAX_NAMES = 4;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** "holds …" (or "would hold …"), or null for a map without the controller's hold counts. */
export function cpuHoldLine(map: RankMap, verb: 'holds' | 'would hold' = 'holds'): string | null {
  const policy = map.cpuPolicy;
  const nodes = map.nodes.filter(
    (n): n is RankMapNode & { cores: NonNullable<RankMapNode['cores']> } => n.cores !== undefined,
  );
  if (!policy || nodes.length === 0) return null;
  return `${verb} ${where(nodes)} (${why(policy, nodes)})`;
}

function where(nodes: ReadonlyArray<RankMapNode & { cores: { held: number; of: number } }>): string {
  const groups = new Map<string, { held: number; of: number; names: string[] }>();
  for (const n of nodes) {
    const key = `${n.cores.held}/${n.cores.of}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { held: n.cores.held, of: n.cores.of, names: [] }));
    g.names.push(n.name);
  }
  const parts = [...groups.values()].slice(0, MAX_GROUPS).map((g) => {
    const names =
      g.names.length > MAX_NAMES
        ? `${g.names.slice(0, MAX_NAMES).join(',')},… (${g.names.length} nodes)`
        : g.names.join(',');
    return `${g.held} of ${plural(g.of, 'core')} on ${names}`;
  });
  const rest = [...groups.values()].slice(MAX_GROUPS).reduce((n, g) => n + g.names.length, 0);
  if (rest > 0) parts.push(`and more on ${plural(rest, 'other node')}`);
  return parts.join(', ');
}

function why(
  policy: RankCpuPolicy,
  nodes: ReadonlyArray<RankMapNode & { cores: { held: number; of: number } }>,
): string {
  if (nodes.every((n) => n.cores.held === 0)) return '--share: it overlaps other jobs';
  switch (policy.applied) {
    case 'asked':
      return `-c ${policy.cpusPerRank} per rank`;
    case 'site': {
      // the most each rank could ask for on its nodes, were they idle
      const most = Math.min(...nodes.map((n) => Math.floor(n.cores.of / Math.max(1, n.ranks.length))));
      const rule = `site default ${policy.cpusPerRank} per rank`;
      return most > (policy.cpusPerRank ?? 0) ? `${rule}: up to -c ${most} for more` : rule;
    }
    case 'share':
      // -c 1 is worth saying only where a rank holds more than one core
      return nodes.some((n) => n.cores.held > n.ranks.length) ? 'share: -c 1 to ask for fewer' : 'share';
    case 'exclusive':
      return nodes.length === 1 ? '--exclusive: the whole node' : '--exclusive: whole nodes';
  }
}
