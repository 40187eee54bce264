// Placing one job on what is free now: pick the nodes that have room for its demand,
// plan on their free facts, and accept the plan only if it has the job's shape.
import type { PlacementSpec, RankMap } from '@rankd/protocol';
import {
  allowedGpus,
  PlanError,
  planRankMap,
  globGroupResolver,
  topologyOf,
  allocationMode,
  allocationOf,
  withHolds,
  type PlannerNode,
  type PlanOptions,
  type GroupResolver,
  type Allocation,
} from '@rankd/planner';
import { describePerNode, jobPlanOptions, shapeOf, type Demand } from './demand.js';
import type { AllocationLedger } from './ledger.js';
import { agree, plural } from '@rankd/protocol/plural';

/** A job waiting in the queue, as the scheduler sees it. */
export interface QueuedJob {
  id: string;
  owner: string | null;
  priority: number;
  createdAt: number;
  spec: PlacementSpec;
  demand: Demand;
  /** Its --timeout: how long it may run, for backfill; null without one. */
  timeLimitMs: number | null;
  /** Nodes its failed attempts left out: never chosen for it. */
  excluded?: ReadonlySet<string>;
  /** A restart of a job that ran: its waiting reason speaks of replacement nodes. */
  restarting?: boolean;
  /** Not started before this time (epoch ms): a restart's --restart-delay. */
  notBefore?: number;
}

export type Placement = { ok: true; rankMap: RankMap; alloc: Allocation } | { ok: false; reason: string };

/** What one scheduling pass shares between placements: the ready nodes in name order, and group lookups. */
export class PlacementContext {
  readonly byName: ReadonlyMap<string, PlannerNode>;
  private readonly groups = new Map<string, PlannerNode[]>();

  constructor(
    /** Ready, undrained nodes in natural name order. */
    readonly nodes: readonly PlannerNode[],
    readonly options: PlanOptions,
  ) {
    this.byName = new Map(nodes.map((n) => [n.name, n]));
  }

  get resolveGroup(): GroupResolver {
    return this.options.resolveGroup ?? globGroupResolver;
  }

  inGroup(group: string): readonly PlannerNode[] {
    let list = this.groups.get(group);
    if (!list) {
      const names = new Set(
        this.resolveGroup(
          group,
          this.nodes.map((n) => n.name),
        ),
      );
      this.groups.set(group, (list = this.nodes.filter((n) => names.has(n.name))));
    }
    return list;
  }
}

const NONE: ReadonlySet<string> = new Set();

export function place(job: QueuedJob, ledger: AllocationLedger, ctx: PlacementContext): Placement {
  const mode = allocationMode(job.spec);
  const d = job.demand;
  const room = (n: PlannerNode): string | null => {
    if (mode === 'exclusive')
      return ledger.isIdle(n.name)
        ? null
        : `${n.name} runs ${plural(ledger.jobsOn(n.name).length, 'job')}; --exclusive needs it idle`;
    if (mode === 'share') return ledger.isExclusive(n.name) ? `${n.name} is held by an --exclusive job` : null;
    const free = ledger.freeFacts(n.name, n.facts);
    const cores = topologyOf(free).cores.length;
    const gpus = allowedGpus(free).length;
    if (cores >= d.coresPerNode && gpus >= d.gpusPerNode) return null;
    const has =
      d.gpusPerNode > 0 ? `${plural(cores, 'free core')} and ${plural(gpus, 'free GPU')}` : plural(cores, 'free core');
    return `${n.name} has ${has}; the job needs ${describePerNode(d)} there`;
  };

  const excluded = job.excluded ?? NONE;
  let chosen: PlannerNode[];
  if (job.spec.nodelist) {
    chosen = [];
    for (const name of job.spec.nodelist) {
      if (excluded.has(name)) return { ok: false, reason: `${name} failed an earlier attempt and is left out` };
      const node = ctx.byName.get(name);
      if (!node)
        return {
          ok: false,
          reason: `${name} cannot take ranks now: ${ctx.options.unavailable?.(name) ?? 'it is not ready'}`,
        };
      const why = room(node);
      if (why) return { ok: false, reason: why };
      chosen.push(node);
    }
  } else {
    // the first nodes with room, in name order: the planner would pick these among the idle ones too
    const pool = job.spec.group ? ctx.inGroup(job.spec.group) : ctx.nodes;
    chosen = [];
    for (const node of pool) {
      if (!excluded.has(node.name) && room(node) === null) chosen.push(node);
      if (chosen.length === d.nodes) break;
    }
    if (chosen.length < d.nodes && job.restarting && mode === 'normal') {
      const missing = d.nodes - chosen.length;
      return { ok: false, reason: `waiting for ${plural(missing, 'replacement node')} with ${describePerNode(d)}` };
    }
    if (chosen.length < d.nodes) {
      const what =
        mode === 'exclusive'
          ? `${plural(d.nodes, 'idle node')} (--exclusive)`
          : mode === 'share'
            ? `${plural(d.nodes, 'node')} without an --exclusive job`
            : `${plural(d.nodes, 'node')} with ${describePerNode(d)}`;
      return { ok: false, reason: `needs ${what}; ${chosen.length} ${agree(chosen.length, 'has', 'have')} room now` };
    }
  }

  const planned = mode === 'normal' ? chosen.map((n) => ({ ...n, facts: ledger.freeFacts(n.name, n.facts) })) : chosen;
  // the nodes are chosen; the spec keeps what shapes ranks, and its node count pinned to the plan's
  const { group: _group, ...rest } = job.spec;
  const spec: PlacementSpec = job.spec.nodelist ? rest : { ...rest, nodes: d.nodes };
  let rankMap: RankMap;
  try {
    rankMap = planRankMap(planned, spec, jobPlanOptions(ctx.options, d));
  } catch (err) {
    if (err instanceof PlanError) return { ok: false, reason: `the free cores do not take its plan: ${err.message}` };
    throw err;
  }
  if (shapeOf(rankMap) !== d.shape) {
    return {
      ok: false,
      reason: `the free cores would give it fewer CPUs or GPUs per rank than planned (${describePerNode(d)} on each node)`,
    };
  }
  const factsOf = new Map(planned.map((n) => [n.name, n.facts]));
  const alloc = allocationOf(rankMap, job.spec, (name) => factsOf.get(name)!);
  return { ok: true, rankMap: withHolds(rankMap, alloc, (name) => ctx.byName.get(name)!.facts), alloc };
}
