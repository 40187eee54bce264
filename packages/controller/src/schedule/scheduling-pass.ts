// One scheduling pass: walk the queue in order (priority, then submission) and start
// every job that fits now, under EASY backfill.
//
// The first job that cannot start (the head) gets a reservation: the time its resources
// free, judged from running jobs' time limits (--timeout), and the resources it would
// take then. A later job may start ahead of it only if it cannot delay it: it ends (by
// its own time limit) before that time, or it takes nothing the head's reservation
// needs. Jobs without a time limit count as never ending. A job waiting on a per-user
// limit gets no reservation: it is not waiting for resources.
//
// The pass works on a copy of the ledger and returns decisions; the caller applies them.
import type { RankMap } from '@rankd/protocol';
import { disjoint, type PlannerNode, type PlanOptions, type Allocation } from '@rankd/planner';
import type { AllocationLedger, HeldJob } from './ledger.js';
import { overLimit, ownerKey, type Usage, type UserLimits } from './limits.js';
import { drainWait, type DrainedNode } from './drained.js';
import { place, PlacementContext, type QueuedJob } from './placement.js';

/** A running job's owner and cores, for per-user limits. */
export interface RunningUsage {
  owner: string | null;
  cores: number;
}

export interface PassInput {
  /** In queue order: see queueOrder(). */
  queue: readonly QueuedJob[];
  ledger: AllocationLedger;
  /** Ready, undrained nodes. */
  nodes: readonly PlannerNode[];
  /** Nodes that would be ready but for a drain: their reasons explain jobs that fit only there. */
  drained: readonly DrainedNode[];
  options: PlanOptions;
  limits: UserLimits;
  /** Owner and cores of each job the ledger holds. */
  usageOf: (id: string) => RunningUsage | undefined;
  now: number;
}

export interface Start {
  job: QueuedJob;
  rankMap: RankMap;
  alloc: Allocation;
  /** When its time limit ends it: Infinity without one. */
  endsAt: number;
}

export interface PassResult {
  starts: Start[];
  /** Why each job that stays queued waits. */
  waits: Map<string, string>;
}

interface Reservation {
  head: QueuedJob;
  until: number;
  /** What the head takes at `until`; null when it does not fit even then (the cluster shrank). */
  alloc: Allocation | null;
}

export function queueOrder(a: QueuedJob, b: QueuedJob): number {
  return b.priority - a.priority || a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export function schedulingPass(input: PassInput): PassResult {
  const ledger = input.ledger.clone();
  const ctx = new PlacementContext(input.nodes, input.options);
  const usage = new Map<string, Usage>();
  const use = (owner: string | null, cores: number) => {
    const u = usage.get(ownerKey(owner)) ?? { jobs: 0, cores: 0 };
    usage.set(ownerKey(owner), { jobs: u.jobs + 1, cores: u.cores + cores });
  };
  for (const id of ledger.jobs.keys()) {
    const u = input.usageOf(id);
    if (u) use(u.owner, u.cores);
  }

  const starts: Start[] = [];
  const waits = new Map<string, string>();
  let reservation: Reservation | null = null;
  // Within a pass resources only shrink (starts hold more, nothing is released), so a
  // placement that failed for one spec fails again for every later job of that spec.
  const failed = new Map<string, string>();
  for (const job of input.queue) {
    if (job.notBefore !== undefined && job.notBefore > input.now) {
      waits.set(job.id, `next attempt at ${new Date(job.notBefore).toISOString()} (--restart-delay)`);
      continue;
    }
    const limit = overLimit(job.owner, job.demand.cores, usage.get(ownerKey(job.owner)), input.limits);
    if (limit) {
      waits.set(job.id, limit);
      continue;
    }
    const key = job.spec.nodelist || job.spec.group ? null : demandKey(job);
    const known = key === null ? undefined : failed.get(key);
    const placed =
      known === undefined ? placeOrDrainWait(job, ledger, ctx, input.drained) : ({ ok: false, reason: known } as const);
    if (!placed.ok) {
      waits.set(job.id, placed.reason);
      if (key !== null) failed.set(key, placed.reason);
      reservation ??= reserve(job, ledger, ctx);
      continue;
    }
    if (reservation && !mayBackfill(job, placed.alloc, reservation, input.now)) {
      waits.set(
        job.id,
        `waits behind job ${reservation.head.id}, which is first in the queue: starting now would delay it`,
      );
      continue;
    }
    const endsAt = job.timeLimitMs === null ? Infinity : input.now + job.timeLimitMs;
    ledger.hold({ id: job.id, alloc: placed.alloc, endsAt });
    use(job.owner, job.demand.cores);
    starts.push({ job, rankMap: placed.rankMap, alloc: placed.alloc, endsAt });
  }
  return { starts, waits };
}

/** Places the job; when it does not fit, and only drained nodes would take it, the drain is its reason. */
function placeOrDrainWait(
  job: QueuedJob,
  ledger: AllocationLedger,
  ctx: PlacementContext,
  drained: readonly DrainedNode[],
): ReturnType<typeof place> {
  const placed = place(job, ledger, ctx);
  if (placed.ok || drained.length === 0) return placed;
  const drain = drainWait(job, ctx, drained);
  return drain === null ? placed : { ok: false, reason: drain };
}

/** When the head would start if running jobs end at their time limits, and what it would take. */
function reserve(head: QueuedJob, ledger: AllocationLedger, ctx: PlacementContext): Reservation {
  const future = ledger.clone();
  const running: HeldJob[] = [...future.jobs.values()].sort((a, b) => a.endsAt - b.endsAt);
  for (const job of running) {
    future.release(job.id);
    const placed = place(head, future, ctx);
    if (placed.ok) return { head, until: job.endsAt, alloc: placed.alloc };
  }
  return { head, until: Infinity, alloc: null };
}

function mayBackfill(job: QueuedJob, alloc: Allocation, r: Reservation, now: number): boolean {
  if (r.alloc === null) return true;
  if (job.timeLimitMs !== null && now + job.timeLimitMs <= r.until) return true;
  return disjoint(alloc, r.alloc);
}

function demandKey(job: QueuedJob): string {
  // the spec too: two specs of one demand can still plan differently (--ht, --nic, …)
  return `${job.demand.nodes}/${job.demand.coresPerNode}/${job.demand.gpusPerNode}/${job.demand.shape}/${job.demand.cpuDefault ?? 'share'}/${JSON.stringify(job.spec)}`;
}
