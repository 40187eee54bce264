// `rankd check net`: the nodes a pattern selects measure each other pair by pair, on the
// rails a rank would use, in a round-robin schedule; the result is analysed, stored, and
// acted on (--drain). Two checks never measure the same node at once: each would load the
// links the other measures.
import { randomBytes } from 'node:crypto';
import { DRAIN_REASON_CHARS } from '@rankd/protocol/limits';
import {
  CheckErrorCode,
  NET_CHECK_DURATION_S,
  NET_CHECK_THRESHOLD,
  RankdError,
  type AgentPresence,
  type CheckKind,
  type CheckResult,
  type CheckSummary,
  type NetCheckRequest,
  type NetCheckResult,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { EventsRepo } from '../store/events-repo.js';
import type { NodeRegistry } from '../nodes/node-registry.js';
import type { FleetInventory } from '../fleet/inventory/inventory-service.js';
import { partitionTargets } from '../fleet/exec/targets.js';
import type { AgentRequests } from '../fleet/exec/agent-requests.js';
import type { ChecksRepo } from './checks-repo.js';
import { analyse, type NodeProblem } from './link-analysis.js';
import { runSchedule } from './net-check.js';
import { agentProber, PortOffer, type PairProber } from './pair-probe.js';
import { planRails, type CheckMember } from './rails.js';
import { runWithRecheck } from './recheck-round.js';

/** The REST bound on a drain's reason: a check's drain keeps within it too. */
const MAX_REASON_CHARS = DRAIN_REASON_CHARS.max;
export const DEFAULT_CHECK_LIST = 20;

export interface NetCheckOptions {
  /** Who asked; null for the controller itself (a job's preflight). */
  by: string | null;
  /** The nodes to check, instead of the request's pattern (a job's preflight). */
  nodes?: readonly string[];
  /** Rounds to run; default all of them. */
  maxRounds?: number;
  /** Then probe each suspect once more against a healthy node (a preflight: see recheck-round.ts). */
  recheck?: boolean;
}

export class CheckService {
  private readonly busy = new Set<string>();
  private readonly listeners: Array<(result: NetCheckResult) => void> = [];
  private readonly probe: PairProber;

  constructor(
    private readonly deps: {
      inventory: FleetInventory;
      registry: NodeRegistry;
      requests: AgentRequests;
      repo: ChecksRepo;
      events: EventsRepo;
      log: Logger;
      /** The prober; tests and the bench give their own. */
      probe?: PairProber;
    },
  ) {
    this.probe = deps.probe ?? agentProber(deps.requests, new PortOffer());
  }

  /** Called with every stored net check (metrics, the dashboard's stream). */
  onNetCheck(listener: (result: NetCheckResult) => void): void {
    this.listeners.push(listener);
  }

  async runNet(req: NetCheckRequest, opts: NetCheckOptions): Promise<NetCheckResult> {
    const pattern = opts.nodes ? opts.nodes.join(',') : (req.pattern ?? 'all');
    const hosts = opts.nodes
      ? opts.nodes.map((node) => ({ host: node, node, agent: this.presence(node) }))
      : this.deps.inventory.resolve(pattern);
    const { ready, skipped } = partitionTargets(hosts, this.deps.registry, 'fabric');
    const names = [...ready.map((t) => t.node), ...skipped.map((s) => s.node ?? s.host)];
    const taken = names.filter((n) => this.busy.has(n));
    if (taken.length > 0)
      throw new RankdError(
        CheckErrorCode.Busy,
        `a check is already measuring ${taken.join(', ')}; wait for it to end (two checks would load each other's links)`,
      );
    for (const n of names) this.busy.add(n);
    try {
      return await this.measure(req, opts, pattern, ready, skipped);
    } finally {
      for (const n of names) this.busy.delete(n);
    }
  }

  get(id: string): CheckResult {
    const found = this.deps.repo.get(id);
    if (!found) throw new RankdError(CheckErrorCode.NotFound, `no check ${id}`);
    return found;
  }

  list(kind: CheckKind | undefined, limit = DEFAULT_CHECK_LIST): CheckSummary[] {
    return this.deps.repo.list(kind, limit);
  }

  private async measure(
    req: NetCheckRequest,
    opts: NetCheckOptions,
    pattern: string,
    ready: ReadonlyArray<{ node: string }>,
    skipped: ReadonlyArray<{ host: string; node: string | null; status: string; error: { message: string } }>,
  ): Promise<NetCheckResult> {
    const { registry, log } = this.deps;
    const startedAt = Date.now();
    const durationS = req.duration ?? NET_CHECK_DURATION_S.default;
    const threshold = req.threshold ?? NET_CHECK_THRESHOLD.default;
    const problems = new Map<string, NodeProblem>();
    // a connected agent that cannot probe (too old for the "fabric" capability) is not unreachable
    for (const s of skipped)
      problems.set(s.node ?? s.host, {
        verdict: s.status === 'UNREACHABLE' ? 'unreachable' : 'flagged',
        reason: s.error.message,
      });
    const members: CheckMember[] = ready.map((t) => {
      const n = registry.get(t.node);
      return { node: t.node, address: n?.address ?? null, facts: n?.facts ?? null };
    });
    const nodes = [...members.map((m) => m.node), ...skipped.map((s) => s.node ?? s.host)];
    const plans = planRails(members, req.rail);
    const base = { id: checkId(), kind: 'net' as const, by: opts.by, pattern, durationS, threshold };

    let message: string | null = null;
    let run = { probes: [] as Awaited<ReturnType<typeof runSchedule>>['probes'], rounds: 0, roundsRun: 0 };
    if (nodes.length < 2) {
      message =
        nodes.length === 1
          ? `one node selected (${nodes[0]}): a net check measures pairs, so there is nothing to measure`
          : 'no node selected';
    } else {
      const schedule = { nodes, plans, problems, probe: this.probe, durationS, maxRounds: opts.maxRounds };
      const rails = plans.map((p) => p.rail);
      run = opts.recheck ? await runWithRecheck({ ...schedule, rails, threshold }) : await runSchedule(schedule);
    }
    const analysis = analyse({
      nodes,
      rails: plans.map((p) => p.rail),
      probes: run.probes,
      problems,
      threshold,
    });
    const drained = req.drain ? this.drain(analysis.nodes, base.id, opts.by) : [];
    const result: NetCheckResult = {
      ...base,
      startedAt,
      endedAt: Date.now(),
      rounds: run.rounds,
      roundsRun: run.roundsRun,
      ...analysis,
      drained,
      message,
    };
    this.deps.repo.save(result, nodes.length);
    this.deps.events.append('check.net', result.id, {
      nodes: nodes.length,
      rounds: result.roundsRun,
      flagged: result.flagged,
      drained,
      by: opts.by,
    });
    log.info({ check: result.id, nodes: nodes.length, flagged: result.flagged, drained }, 'net check finished');
    for (const l of this.listeners) l(result);
    return result;
  }

  /** Drains every node the check did not find ok, with its finding as the reason. */
  private drain(verdicts: NetCheckResult['nodes'], id: string, by: string | null): string[] {
    const drained: string[] = [];
    for (const v of verdicts) {
      if (v.verdict === 'ok' || !this.deps.registry.get(v.node)) continue;
      const text = `rankd check net ${id}: ${v.reason ?? v.verdict}`;
      const reason = text.length <= MAX_REASON_CHARS ? text : `${text.slice(0, MAX_REASON_CHARS - 1)}…`;
      if (this.deps.registry.drain(v.node, reason, by)) drained.push(v.node);
    }
    return drained;
  }

  private presence(node: string): AgentPresence {
    const n = this.deps.registry.get(node);
    if (!n) return 'none';
    return n.state === 'ready' ? 'ready' : n.state === 'lost' ? 'lost' : 'unreachable';
  }
}

/** Sortable by time, unique enough for a check every millisecond: c-<base36 ms>-<6 hex>. */
function checkId(): string {
  return `c-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}
