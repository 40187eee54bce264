// From a rank's share of cores to the CPUs it runs on: compute threads (`-c`, `--ht`)
// and the CPUs reserved for communication workers (`--comm-workers`, `--comm-on`).
//
// The rank takes the first C cores of its share for compute; workers go to the end of
// the share, either on the sibling threads of its last K cores (the seeds' layout:
// compute 0-47, workers 164-167 on a 2 × 56-core machine numbered i / i+112), or on
// the last K cores themselves, kept apart from compute (machines without hyperthreads).
import { PlanErrorCode } from '@rankd/protocol';
import { PlanError } from './errors.js';
import type { TopoCore } from './topology.js';
import { plural } from '@rankd/protocol/plural';

export interface CpuPolicy {
  /** Compute cores per rank; undefined means the whole share (less the worker cores). */
  cpusPerRank: number | undefined;
  /** cpusPerRank is the site's default, not the job's -c: errors say so. */
  fromSite: boolean;
  ht: 'first' | 'all';
  commWorkers: number;
  commOn: 'siblings' | 'cores';
  /** Why the node has fewer allowed CPUs than CPUs (limit-notes.ts), for refusals. */
  cpusetNote?: string | null;
}

export interface RankCpus {
  cpus: number[];
  commCpus: number[];
}

export function bindShare(share: readonly TopoCore[], policy: CpuPolicy, node: string, localRank: number): RankCpus {
  const k = policy.commWorkers;
  const size = share.length;
  const limit = policy.cpusetNote ? ` (${policy.cpusetNote})` : '';
  const where = `local rank ${localRank}'s share has ${plural(size, 'allowed core')}${limit}`;
  const reserved = policy.commOn === 'cores' ? k : 0;

  if (policy.cpusPerRank !== undefined && policy.cpusPerRank > size) {
    const asked = policy.fromSite
      ? `the site default of ${policy.cpusPerRank} core${policy.cpusPerRank === 1 ? '' : 's'} per rank (rankd controller --default-cpus-per-rank)`
      : `-c ${policy.cpusPerRank}`;
    throw new PlanError(PlanErrorCode.TooManyCpus, `${asked} asks for more compute cores than ${where}`, {
      node,
      suggestion: { cpusPerRank: Math.max(1, size - reserved) },
    });
  }
  if (k > size) {
    throw new PlanError(PlanErrorCode.CommNoRoom, `${k} comm workers do not fit: ${where}`, {
      node,
      suggestion: { commWorkers: Math.max(0, size - (policy.commOn === 'cores' ? 1 : 0)) },
    });
  }
  const c = policy.cpusPerRank ?? size - reserved;
  if (c < 1 || c + reserved > size) {
    throw new PlanError(
      PlanErrorCode.CommNoRoom,
      `${k} comm worker cores and ${c} compute cores do not fit: ${where}`,
      { node, suggestion: size - reserved >= 1 ? { cpusPerRank: size - reserved } : { commWorkers: size - 1 } },
    );
  }

  const compute = share.slice(0, c);
  const cpus = policy.ht === 'all' ? compute.flatMap((core) => core.pus) : compute.map((core) => core.pus[0]!);
  const workerCores = share.slice(size - k);
  let commCpus: number[];
  if (policy.commOn === 'cores') {
    commCpus = workerCores.map((core) => core.pus[0]!);
  } else {
    commCpus = workerCores.map((core, i) => {
      const sibling = core.pus[1];
      if (sibling === undefined) {
        throw new PlanError(
          PlanErrorCode.CommNoRoom,
          `comm workers on siblings, but core of CPU ${core.pus[0]} has no allowed sibling thread`,
          { node, suggestion: { commOn: 'cores', cpusPerRank: Math.max(1, size - k) } },
        );
      }
      if (policy.ht === 'all' && size - k + i < c) {
        throw new PlanError(
          PlanErrorCode.CommNoRoom,
          `with --ht all, the sibling threads of the last ${plural(k, 'core')} already run compute (-c ${c} of ${plural(size, 'core')})`,
          { node, suggestion: { cpusPerRank: size - k } },
        );
      }
      return sibling;
    });
  }
  return { cpus: cpus.sort((a, b) => a - b), commCpus: commCpus.sort((a, b) => a - b) };
}
