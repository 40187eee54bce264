// Admission: whether a submitted job can ever run, and what it asks for.
//
// The job is planned on the ready cluster as if it were idle. If that plan is impossible
// (more ranks, cores or GPUs than the ready nodes have, an unknown node, a bad spec),
// the job is refused at once with the planner's reason: it would otherwise wait forever.
// The idle plan gives the job's demand, which the scheduler matches against what is free.
import { DEFAULT_PRIORITY, ErrorCode, RankdError, type Facts, type JobSubmit, type RankMap } from '@rankd/protocol';
import { planRankMap, type PlannerNode, type PlanOptions } from '../planner/index.js';
import { allocationOf, coresUsed } from '../schedule/allocation.js';
import { demandOf } from '../schedule/demand.js';
import { neverWithin, type UserLimits } from '../schedule/limits.js';
import type { QueuedJob } from '../schedule/placement.js';

export function admit(id: string, submit: JobSubmit, owner: string | null, now: number, nodes: readonly PlannerNode[], options: PlanOptions, limits: UserLimits): { job: QueuedJob; idle: RankMap } {
  const spec = submit.placement ?? {};
  if (spec.exclusive && spec.share) throw new RankdError(ErrorCode.InvalidRequest, '--exclusive and --share contradict each other; give one');
  const idle = planRankMap(nodes, spec, options);
  checkStdin(submit, idle.worldSize);
  const facts = new Map<string, Facts>(nodes.map((n) => [n.name, n.facts]));
  const factsOf = (name: string) => facts.get(name)!;
  const cores = coresUsed(idle, factsOf);
  const never = neverWithin(cores, limits);
  if (never) throw new RankdError(ErrorCode.OverLimit, `the job can never run: ${never}`);
  const job: QueuedJob = {
    id,
    owner,
    priority: submit.priority ?? DEFAULT_PRIORITY,
    createdAt: now,
    spec,
    demand: demandOf(idle, allocationOf(idle, spec, factsOf), factsOf, cores),
    timeLimitMs: submit.timeout === undefined ? null : submit.timeout * 1000,
  };
  return { job, idle };
}

/** A job's stdin goes to ranks it has, and only where the agent holds the ranks' stdio. */
function checkStdin(submit: JobSubmit, worldSize: number): void {
  if (submit.stdin === undefined) return;
  if (submit.pty) throw new RankdError(ErrorCode.StdinUnsupported, 'stdin is not forwarded to --pty ranks: leave --input out (each rank has its terminal)');
  if (submit.mpi === 'openmpi') throw new RankdError(ErrorCode.StdinUnsupported, "stdin is not forwarded with --mpi openmpi (mpirun holds the ranks' stdio): leave --input out");
  if (typeof submit.stdin === 'number' && submit.stdin >= worldSize) {
    throw new RankdError(ErrorCode.StdinRankOutOfRange, `--input ${submit.stdin}: the job has ${worldSize === 1 ? 'one rank, 0' : `${worldSize} ranks, 0 to ${worldSize - 1}`}`);
  }
}
