// Which candidate nodes a spec runs on: --nodelist (in its order), --group (an
// inventory pattern), or every candidate in natural name order; then -N keeps the first N.
import { PlanErrorCode, type PlacementSpec } from '@rankd/protocol';
import { PlanError } from './errors.js';
import { naturalCompare } from '@rankd/protocol/natural-order';
import { globToRegExp } from './glob.js';
import { agree, plural } from '@rankd/protocol/plural';

export type GroupResolver = (group: string, candidates: readonly string[]) => readonly string[];

const byName = naturalCompare;

/** Without an inventory: comma-separated globs over node names, `!glob` excluding. */
export const globGroupResolver: GroupResolver = (group, candidates) => {
  const terms = group
    .split(/[,:]/)
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const include = terms.filter((t) => !t.startsWith('!')).map(globToRegExp);
  const exclude = terms.filter((t) => t.startsWith('!')).map((t) => globToRegExp(t.slice(1)));
  return candidates.filter(
    (name) => (include.length === 0 || include.some((re) => re.test(name))) && !exclude.some((re) => re.test(name)),
  );
};

export function selectNodes<T extends { name: string }>(
  candidates: readonly T[],
  spec: PlacementSpec,
  resolveGroup: GroupResolver = globGroupResolver,
  unavailable: (name: string) => string | null = () => null,
): { nodes: T[]; explicit: boolean } {
  if (spec.nodelist && spec.group) {
    throw new PlanError(PlanErrorCode.BadSpec, '--nodelist and --group both select nodes; give one');
  }
  const byNameMap = new Map(candidates.map((n) => [n.name, n]));
  let selected: T[];
  if (spec.nodelist) {
    const seen = new Set<string>();
    selected = spec.nodelist.map((name) => {
      if (seen.has(name)) throw new PlanError(PlanErrorCode.BadSpec, `--nodelist names ${name} twice`);
      seen.add(name);
      const node = byNameMap.get(name);
      if (!node) {
        const why = unavailable(name);
        if (why !== null)
          throw new PlanError(PlanErrorCode.UnknownNode, `cannot take ranks now: ${why}`, { node: name });
        const known = [...byNameMap.keys()].sort(byName);
        const shown = known.length > 8 ? `${known.slice(0, 8).join(',')},…` : known.join(',') || 'none';
        throw new PlanError(PlanErrorCode.UnknownNode, `not a ready node (ready: ${shown})`, { node: name });
      }
      return node;
    });
  } else if (spec.group) {
    const names = new Set(resolveGroup(spec.group, [...byNameMap.keys()]));
    selected = candidates.filter((n) => names.has(n.name)).sort((a, b) => byName(a.name, b.name));
    if (selected.length === 0)
      throw new PlanError(PlanErrorCode.NoNodes, `no ready node matches --group ${spec.group}`);
  } else {
    selected = [...candidates].sort((a, b) => byName(a.name, b.name));
  }
  if (selected.length === 0) throw new PlanError(PlanErrorCode.NoNodes, 'no ready node to plan on');
  if (spec.nodes !== undefined) {
    if (spec.nodes > selected.length) {
      throw new PlanError(
        PlanErrorCode.NodeCount,
        `-N ${spec.nodes} asks for more nodes than the ${plural(selected.length, 'node')} that ${agree(selected.length, 'matches', 'match')}`,
        {
          suggestion: { nodes: selected.length },
        },
      );
    }
    selected = selected.slice(0, spec.nodes);
  }
  return { nodes: selected, explicit: spec.nodes !== undefined || spec.nodelist !== undefined };
}
