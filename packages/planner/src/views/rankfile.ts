// An Open MPI rankfile. Slots are OS CPU ids (compute and worker CPUs), which Open MPI
// reads as physical ids only with rmaps_rank_file_physical set, hence the header.
import { formatCpuList } from '@rankd/protocol/cpuset';
import type { RankMap } from '@rankd/protocol';

export function renderRankfile(map: RankMap): string {
  let out = '# physical CPU ids: mpirun --mca rmaps_rank_file_physical 1 --rankfile FILE\n';
  for (const r of map.ranks) out += `rank ${r.rank}=${r.node} slot=${formatCpuList([...r.cpus, ...r.commCpus])}\n`;
  return out;
}
