// The warnings ranks carry (from the agent's preflight: RLIMIT_MEMLOCK not raised, a root
// rank's loader variables left out, …) said once per node and message instead of once per
// rank: every rank of a node usually carries the same ones. Schema-free, for `rankd run`,
// `rankd job` and the log stream.
import { formatCpuList } from './cpuset.js';

export interface NodeWarning {
  node: string;
  /** The ranks of that node that carry it, ascending. */
  ranks: number[];
  message: string;
}

export interface RankWarnings {
  rank: number;
  node: string;
  warnings: readonly string[];
}

/** One entry per node and message, in node order of first appearance. */
export function warningsByNode(ranks: readonly RankWarnings[]): NodeWarning[] {
  const byKey = new Map<string, NodeWarning>();
  for (const r of ranks) {
    for (const message of r.warnings) {
      const key = `${r.node}\0${message}`;
      let entry = byKey.get(key);
      if (!entry) byKey.set(key, (entry = { node: r.node, ranks: [], message }));
      entry.ranks.push(r.rank);
    }
  }
  for (const entry of byKey.values()) entry.ranks.sort((a, b) => a - b);
  return [...byKey.values()];
}

/** "vm (rank 0): RLIMIT_MEMLOCK stays …", "vm (ranks 0-3): …". */
export function describeNodeWarning(w: NodeWarning): string {
  return `${w.node} (${w.ranks.length === 1 ? 'rank' : 'ranks'} ${formatCpuList(w.ranks)}): ${w.message}`;
}
