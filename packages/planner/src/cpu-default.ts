// The site's default CPUs per rank for jobs without -c (`rankd controller
// --default-cpus-per-rank share|N`), and which rule a spec ends up under.
//
// `share` divides each node among its ranks: right for someone who owns the node (Intel
// MPI's pin domains and DeepSpeed's --bind_cores_to_rank divide it so). N gives each rank N
// cores: right on a shared cluster, where srun gives 1 CPU per task, so that `-n 1` does
// not hold a whole node and queue behind everything. An --exclusive job divides its nodes
// whatever the default: it holds all of them anyway.
import type { CpuDefault, PlacementSpec, RankCpuPolicy } from '@rankd/protocol';

export function rankCpuPolicy(spec: PlacementSpec, site: CpuDefault): RankCpuPolicy {
  if (spec.cpusPerRank !== undefined) return { site, applied: 'asked', cpusPerRank: spec.cpusPerRank };
  if (spec.exclusive) return { site, applied: 'exclusive', cpusPerRank: null };
  if (site === 'share') return { site, applied: 'share', cpusPerRank: null };
  return { site, applied: 'site', cpusPerRank: site };
}
