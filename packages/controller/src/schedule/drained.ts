// Drained nodes keep jobs waiting; they do not refuse them. A job that the ready nodes
// cannot take even when idle, but that would run with drained nodes back, waits in the
// queue with the operator's drain reason ("node vm drained: bad DIMM"), as Slurm keeps
// such a job pending (ReqNodeNotAvail) rather than rejecting it; resuming the node starts
// it. With --immediate the same reason refuses it.
import type { PlacementSpec } from '@rankd/protocol';
import { PlanError, planRankMap, type PlannerNode } from '@rankd/planner';
import { naturalCompare } from '@rankd/protocol/natural-order';
import { jobPlanOptions, shapeOf } from './demand.js';
import type { PlacementContext, QueuedJob } from './placement.js';

/** A node that would be a candidate but for its drain. */
export interface DrainedNode extends PlannerNode {
  /** What the operator gave with `rankd nodes drain`. */
  drain: string;
}

/** Reasons shown, and node names shown per reason, before the rest is counted. */
const MAX_REASONS = 3;
const MAX_NAMES = 4;

/**
 * Why `job` waits on drains: the drain reasons of the drained nodes it could use, when the
 * ready nodes, idle, cannot give it its planned shape. Null when drains are not what keeps
 * it waiting (it fits the ready nodes and waits for them to free).
 */
export function drainWait(job: QueuedJob, ctx: PlacementContext, drained: readonly DrainedNode[]): string | null {
  const usable = drainedFor(job.spec, ctx, drained);
  if (usable.length === 0 || fitsIdle(job, ctx)) return null;
  return summarizeDrains(usable);
}

function drainedFor(spec: PlacementSpec, ctx: PlacementContext, drained: readonly DrainedNode[]): DrainedNode[] {
  if (spec.nodelist) {
    const wanted = new Set(spec.nodelist);
    return drained.filter((n) => wanted.has(n.name));
  }
  if (spec.group) {
    const names = new Set(
      ctx.resolveGroup(
        spec.group,
        drained.map((n) => n.name),
      ),
    );
    return drained.filter((n) => names.has(n.name));
  }
  return [...drained];
}

function fitsIdle(job: QueuedJob, ctx: PlacementContext): boolean {
  try {
    return shapeOf(planRankMap(ctx.nodes, job.spec, jobPlanOptions(ctx.options, job.demand))) === job.demand.shape;
  } catch (err) {
    if (err instanceof PlanError) return false;
    throw err;
  }
}

/** "node vm drained: bad DIMM", or per reason "nodes a,b,c,d,… (+3) drained: fan; …; 2 more reasons". */
export function summarizeDrains(nodes: readonly DrainedNode[]): string {
  const byReason = new Map<string, string[]>();
  for (const n of [...nodes].sort((a, b) => naturalCompare(a.name, b.name))) {
    let names = byReason.get(n.drain);
    if (!names) byReason.set(n.drain, (names = []));
    names.push(n.name);
  }
  const parts = [...byReason].slice(0, MAX_REASONS).map(([reason, names]) => {
    const shown =
      names.length > MAX_NAMES
        ? `${names.slice(0, MAX_NAMES).join(',')},… (+${names.length - MAX_NAMES})`
        : names.join(',');
    return `${names.length === 1 ? 'node' : 'nodes'} ${shown} drained: ${reason}`;
  });
  const more = byReason.size - MAX_REASONS;
  if (more > 0) parts.push(`${more} more drain reason${more === 1 ? '' : 's'}`);
  return parts.join('; ');
}
