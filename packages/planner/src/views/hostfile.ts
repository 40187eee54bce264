// `host slots=N`, the hostfile of Open MPI, DeepSpeed and the seeds' nodefiles.
import type { RankMap } from '@rankd/protocol';

export function renderHostfile(map: RankMap): string {
  return map.nodes.map((n) => `${n.name} slots=${n.ranks.length}\n`).join('');
}
