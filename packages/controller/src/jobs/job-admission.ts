// Admission: whether a submitted job can ever run, and what it asks for.
//
// The job is planned on the ready cluster as if it were idle. If that plan is impossible
// (more ranks, cores or GPUs than the ready nodes have, an unknown node, a bad spec),
// the job is refused at once with the planner's reason: it would otherwise wait forever.
// The idle plan gives the job's demand, which the scheduler matches against what is free.
// Drained nodes count as coming back: a job that plans only with them is admitted (its
// demand planned on the ready and drained nodes together) and waits with the drain's
// reason (schedule/drained.ts); one that cannot run even then is refused.
import {
  DEFAULT_PRIORITY,
  ErrorCode,
  RankdError,
  type Facts,
  type JobSubmit,
  type PlacementSpec,
  type RankMap,
} from '@rankd/protocol';
import {
  PlanError,
  planRankMap,
  allocationOf,
  coresUsed,
  withHolds,
  type PlannerNode,
  type PlanOptions,
} from '@rankd/planner';
import type { DrainedNode } from '../schedule/drained.js';
import { demandOf } from '../schedule/demand.js';
import { neverWithin, type UserLimits } from '../schedule/limits.js';
import type { QueuedJob } from '../schedule/placement.js';

export function admit(
  id: string,
  submit: JobSubmit,
  owner: string | null,
  now: number,
  nodes: readonly PlannerNode[],
  options: PlanOptions,
  limits: UserLimits,
  drained: readonly DrainedNode[] = [],
): { job: QueuedJob; idle: RankMap } {
  const spec = submit.placement ?? {};
  if (spec.exclusive && spec.share)
    throw new RankdError(ErrorCode.InvalidRequest, '--exclusive and --share contradict each other; give one');
  const { idle: plan, planned } = idlePlan(nodes, drained, spec, options);
  checkStdin(submit, plan.worldSize);
  const facts = new Map<string, Facts>(planned.map((n) => [n.name, n.facts]));
  const factsOf = (name: string) => facts.get(name)!;
  const alloc = allocationOf(plan, spec, factsOf);
  const idle = withHolds(plan, alloc, factsOf);
  const cores = coresUsed(idle, factsOf);
  const never = neverWithin(cores, limits);
  if (never) throw new RankdError(ErrorCode.OverLimit, `the job can never run: ${never}`);
  const job: QueuedJob = {
    id,
    owner,
    priority: submit.priority ?? DEFAULT_PRIORITY,
    createdAt: now,
    spec,
    demand: demandOf(idle, alloc, factsOf, cores),
    timeLimitMs: submit.timeout === undefined ? null : submit.timeout * 1000,
  };
  return { job, idle };
}

/** A job's stdin goes to ranks it has, and only where the agent holds the ranks' stdio. */
function checkStdin(submit: JobSubmit, worldSize: number): void {
  if (submit.stdin === undefined) return;
  if (submit.pty)
    throw new RankdError(
      ErrorCode.StdinUnsupported,
      'stdin is not forwarded to --pty ranks: leave --input out (each rank has its terminal)',
    );
  if (submit.mpi === 'openmpi')
    throw new RankdError(
      ErrorCode.StdinUnsupported,
      "stdin is not forwarded with --mpi openmpi (mpirun holds the ranks' stdio): leave --input out",
    );
  // the bytes the first attempt read are gone: a restart could not give its ranks the same input
  if ((submit.maxRestarts ?? 0) > 0)
    throw new RankdError(
      ErrorCode.StdinUnsupported,
      'stdin is read once and cannot be replayed into a restarted attempt: leave --input out, or --max-restarts',
    );
  if (typeof submit.stdin === 'number' && submit.stdin >= worldSize) {
    throw new RankdError(
      ErrorCode.StdinRankOutOfRange,
      `--input ${submit.stdin}: the job has ${worldSize === 1 ? 'one rank, 0' : `${worldSize} ranks, 0 to ${worldSize - 1}`}`,
    );
  }
}

/** The plan on the idle ready nodes; failing that, on the ready and drained nodes together. */
function idlePlan(
  nodes: readonly PlannerNode[],
  drained: readonly DrainedNode[],
  spec: PlacementSpec,
  options: PlanOptions,
): { idle: RankMap; planned: readonly PlannerNode[] } {
  try {
    return { idle: planRankMap(nodes, spec, options), planned: nodes };
  } catch (err) {
    if (!(err instanceof PlanError) || drained.length === 0) throw err;
  }
  // a failure here is why the job can never run, drains or not: that is the refusal
  const all = [...nodes, ...drained.map(({ drain: _drain, ...node }) => node)];
  return { idle: planRankMap(all, spec, options), planned: all };
}
