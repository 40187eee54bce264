// Jobs from submission to their last rank's exit.
//
// A submitted job is admitted (it can run on the ready cluster), queued, and started
// by the scheduler once what it asks for is free (schedule/). The manager keeps queued
// jobs in memory and writes their changes through to the store; once a job is planned,
// its life belongs to the lifecycle (job-lifecycle.ts), which alone holds live jobs.
// A --preflight job is planned and holds its allocation while its nodes are measured; it
// stays queued to its submitter until the check passes (preflight-decision.ts).
import { EventEmitter } from 'node:events';
import {
  ErrorCode,
  NET_CHECK_THRESHOLD,
  RankdError,
  type CpuDefault,
  type JobState,
  type JobList,
  type JobSubmit,
  type JobView,
  type PlacementSpec,
  type PlanAnswer,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { NodeRegistry, NodeStateChange } from '../nodes/node-registry.js';
import { allocationOf, type GroupResolver, type PlanOptions } from '@rankd/planner';
import type { UserLimits } from '../schedule/limits.js';
import { Scheduler } from '../schedule/scheduler.js';
import type { Start } from '../schedule/scheduling-pass.js';
import { AllocationLedger } from '../schedule/ledger.js';
import { place, PlacementContext } from '../schedule/placement.js';
import { naturalCompare } from '@rankd/protocol/natural-order';
import type { EventsRepo } from '../store/events-repo.js';
import type { JobRecord } from './job-records.js';
import type { JobFilter, JobsRepo } from './jobs-repo.js';
import { admit } from './job-admission.js';
import type { AgentSender } from '../gateway/agent-sender.js';
import { systemClock, type Clock } from './clock.js';
import { DirectStart } from './direct-start.js';
import { JobLifecycle } from './job-lifecycle.js';
import { attemptId, endsAt, queuedJob, queuedRecord } from './job-records.js';
import { restartLabel } from './restart-policy.js';
import { newJobId } from './job-ids.js';
import { jobSummary, jobView } from './job-view.js';
import type { LogStore } from './log-store.js';
import type { NodeFailure } from './attempts-repo.js';
import { MasterPorts } from './master-ports.js';
import { nodesOf, type LiveJobView } from './live-job.js';
import type { MpiStrategy } from './mpi-strategy.js';
import {
  measureNodes,
  refereesFor,
  PREFLIGHT_DURATION_S,
  PREFLIGHT_FAILED_STATUS,
  type PreflightChecks,
} from './preflight.js';
import { decidePreflight, oneNodeNote, unmeasured, type PreflightDecision } from './preflight-decision.js';

export { exitStatus, isTerminal } from './rank-status.js';

/**
 * ended: a job ended (its last attempt's ranks are gone). restarting: a failed attempt is
 * closed and the job is queued for its next. attemptEnded: an attempt's ranks are gone,
 * by the id its agents knew it by. nodesFailed: nodes failed an attempt (lost, or a rank
 * killed by a hardware-like signal). changed: anything of a job changed.
 */
interface JobEvents {
  ended: [id: string, state: JobState];
  restarting: [id: string];
  nodesFailed: [failures: readonly NodeFailure[]];
  attemptEnded: [attemptId: string];
  changed: [id: string];
}

export class JobManager extends EventEmitter<JobEvents> {
  /** Planned jobs until their last rank's exit: the only place they change. */
  readonly lifecycle: JobLifecycle;
  /** Queued jobs' records; the scheduler keeps their order. */
  private readonly queued = new Map<string, JobRecord>();
  readonly scheduler: Scheduler;
  private readonly ports = new MasterPorts();
  /** The timers that wake the scheduler when a restarting job's --restart-delay is over. */
  private readonly restartTimers = new Map<string, () => void>();
  /** How --preflight jobs' nodes are measured; the controller wires its checks here. */
  private preflightChecks: PreflightChecks | null = null;
  /** Jobs whose preflight runs: planned and holding their allocation, still queued, no rank started. */
  private readonly preflighting = new Map<string, { cancelled: boolean }>();

  constructor(
    private readonly repo: JobsRepo,
    /** The history: rank events are appended here too, so that one log tells the whole story. */
    readonly events: EventsRepo,
    readonly logs: LogStore,
    private readonly registry: NodeRegistry,
    private readonly agents: AgentSender,
    /** How --mpi openmpi jobs start (openmpi/); pmi1 and none jobs are started by their agents alone. */
    openmpi: MpiStrategy,
    private readonly log: Logger,
    /** --group against the inventory; globs over node names without one. */
    private readonly resolveGroup?: GroupResolver,
    limits: UserLimits = {},
    /** CPUs per rank for jobs without -c (`rankd controller --default-cpus-per-rank`). */
    private readonly defaultCpusPerRank: CpuDefault = 'share',
    private readonly clock: Clock = systemClock,
  ) {
    super();
    this.setMaxListeners(0);
    this.lifecycle = new JobLifecycle({
      repo,
      events,
      logs,
      agents,
      connected: (node) => Boolean(registry.link(node)),
      leaseMs: () => registry.timing.lostAfterMs,
      ports: this.ports,
      modes: { pmi1: new DirectStart(agents, true), none: new DirectStart(agents, false), openmpi },
      clock,
      log,
      hooks: {
        changed: (id) => this.emit('changed', id),
        ended: (id, state) => this.emit('ended', id, state),
        released: (id) => this.scheduler.release(id),
        attemptEnded: (attemptId) => this.emit('attemptEnded', attemptId),
        restarting: (job) => this.requeue(job),
        nodesFailed: (failures) => this.emit('nodesFailed', failures),
      },
    });
    this.scheduler = new Scheduler(
      {
        nodes: () => this.registry.candidates(),
        drained: () => this.registry.drained(),
        planOptions: () => this.planOptions(),
        usageOf: (id) => {
          const job = this.lifecycle.get(id)?.job ?? (this.preflighting.has(id) ? this.queued.get(id) : undefined);
          return job && { owner: job.owner, cores: job.demand?.cores ?? 0 };
        },
        start: (start) => this.startQueued(start),
        waiting: (id, reason) => this.stillQueued(id, reason),
        now: () => this.clock.now(),
      },
      limits,
    );
    registry.on('state', (change) => this.onNodeState(change));
    // a node that is ready again, resumed, or reports new facts may let queued jobs start
    registry.on('changed', () => this.scheduler.schedule());
    // a drain starts nothing, but queued jobs that now wait on it should say so
    registry.on('drained', () => this.scheduler.schedule());
  }

  /** Where --preflight jobs' checks run (the fleet's CheckService); without it such jobs are refused. */
  usePreflight(checks: PreflightChecks): void {
    this.preflightChecks = checks;
  }

  /** Live jobs, read-only: views, metrics and relays read them; only the lifecycle changes them. */
  get live(): ReadonlyMap<string, LiveJobView> {
    return this.lifecycle.view;
  }

  planOptions(): PlanOptions {
    return {
      pickPort: (node) => this.pickPort(node),
      unavailable: (node) => this.registry.unavailable(node),
      defaultCpusPerRank: this.defaultCpusPerRank,
      ...(this.resolveGroup ? { resolveGroup: this.resolveGroup } : {}),
    };
  }

  /** Reloads the jobs that were live when the controller stopped. */
  restore(): void {
    for (const job of this.repo.listActive()) {
      if (job.state === 'queued' || job.rankMap === null) {
        this.queued.set(job.id, job);
        this.scheduler.enqueue(queuedJob(job));
        this.wakeAfterDelay(job);
        continue;
      }
      this.scheduler.hold(job.id, job.allocation ?? this.allocationFromMap(job), endsAt(job));
      const ranks = this.repo.ranks(job);
      for (const r of ranks) {
        // the files are the truth for what is stored; the index may lag a crash
        const sizes = this.logs.open(attemptId(job.id, job.attempt), r.rank);
        r.stdoutBytes = sizes.stdout;
        r.stderrBytes = sizes.stderr;
        // a crash can fall between a chunk's write and its rank.output event: this event
        // accounts for such bytes, so the history's offsets stay contiguous
        this.events.append('rank.output.size', `${attemptId(job.id, job.attempt)}/${r.rank}`, {
          ...sizes,
          reason: 'controller restarted',
        });
      }
      this.lifecycle.adopt(job, ranks);
      this.log.info({ job: job.id, state: job.state }, 'restored live job');
    }
    this.scheduler.schedule();
  }

  /**
   * Admits a job for `owner` and queues it; the pass that follows starts it at once if it
   * fits. A resubmitted idempotency key returns the existing job. --immediate refuses a job
   * that would wait, before anything of it is stored.
   */
  submit(submit: JobSubmit, owner: string | null = null): { view: JobView; created: boolean } {
    if (submit.idempotencyKey) {
      const existing = this.repo.getByKey(submit.idempotencyKey);
      if (existing) return { view: this.view(existing.id)!, created: false };
    }
    this.checkPreflight(submit);
    const now = this.clock.now();
    const { job: queued } = admit(
      newJobId(now),
      submit,
      owner,
      now,
      this.registry.candidates(),
      this.planOptions(),
      this.scheduler.limits,
      this.registry.drained(),
    );
    if (submit.immediate) {
      const tried = this.scheduler.tryNow(queued);
      if (!tried.starts)
        throw new RankdError(ErrorCode.WouldWait, `--immediate: the job cannot start now: ${tried.reason}`);
    }
    const job = queuedRecord(queued, submit, owner);
    this.repo.create(job);
    this.events.append('job.submitted', job.id, {
      worldSize: queued.demand.ranks,
      nodes: queued.demand.nodes,
      cores: queued.demand.cores,
      gpus: queued.demand.gpus,
      priority: queued.priority,
    });
    this.queued.set(job.id, job);
    this.scheduler.enqueue(queued);
    this.scheduler.run();
    return { view: this.view(job.id)!, created: true };
  }

  private checkPreflight(submit: JobSubmit): void {
    if (submit.preflightThreshold !== undefined && !submit.preflight)
      throw new RankdError(
        ErrorCode.InvalidRequest,
        'preflightThreshold is the threshold of a preflight: set preflight',
      );
    if (submit.preflight && !this.preflightChecks)
      throw new RankdError(ErrorCode.InvalidRequest, 'this controller runs no fabric checks: a preflight cannot run');
  }

  /** The scheduler found room: the job goes to the lifecycle (after its preflight, if it asked for one). */
  private startQueued(start: Start): void {
    const job = this.queued.get(start.job.id);
    if (!job) return;
    if (job.submit.preflight) this.preflight(job, start);
    else this.launch(job, start);
  }

  /** The job leaves the queue for the lifecycle, which starts its ranks. */
  private launch(job: JobRecord, { rankMap, alloc }: Start): void {
    this.queued.delete(job.id);
    this.lifecycle.begin(job, rankMap, alloc);
    this.emit('changed', job.id);
  }

  /**
   * A --preflight job was planned: its ranks wait while the plan's nodes are measured. It
   * holds what the pass gave it meanwhile (no other job is placed on nodes under measurement),
   * for as long as the check's deadline at most, and stays queued with the preflight as its
   * reason. Every outcome arrives on a later tick, the one-node no-op's too, so that the
   * submitter is told what the preflight did.
   */
  private preflight(job: JobRecord, start: Start): void {
    const nodes = start.rankMap.nodes.map((n) => n.name);
    const threshold = job.submit.preflightThreshold ?? NET_CHECK_THRESHOLD.default;
    const entry = { cancelled: false };
    this.preflighting.set(job.id, entry);
    const { attempt } = job;
    let outcome: Promise<PreflightDecision | null>;
    if (nodes.length < 2) {
      this.preflightNote(job, oneNodeNote(nodes[0]!), { action: 'skipped', nodes, attempt });
      outcome = Promise.resolve(null);
    } else {
      // nodes it left out already would be measured again for nothing
      const ready = this.registry
        .candidates()
        .map((n) => n.name)
        .filter((n) => !job.excluded.includes(n));
      const referees = refereesFor(nodes, ready, (n) => this.scheduler.ledger.isIdle(n));
      const what = [
        `${PREFLIGHT_DURATION_S} s probes, threshold ${threshold}`,
        ...(referees.length > 0 ? [`${referees.join(', ')} as ${referees.length > 1 ? 'referees' : 'referee'}`] : []),
      ];
      const note = `preflight: measuring ${nodes.join(', ')} (${what.join('; ')})`;
      this.preflightNote(job, note, { action: 'measuring', nodes, referees, attempt });
      outcome = this.measure(job, nodes, referees, threshold);
    }
    void outcome.then((decision) => {
      this.preflighting.delete(job.id);
      // cancelled meanwhile: the job has ended; its probes are over now, and so is its hold
      if (entry.cancelled) this.scheduler.release(job.id);
      else if (decision === null) this.launch(job, start);
      else this.applyPreflight(job, start, decision);
    });
  }

  private async measure(
    job: JobRecord,
    nodes: string[],
    referees: string[],
    threshold: number,
  ): Promise<PreflightDecision> {
    if (!this.preflightChecks) return unmeasured('this controller runs no fabric checks');
    const outcome = await measureNodes(this.preflightChecks, [...nodes, ...referees], threshold, this.clock);
    if ('error' in outcome) return unmeasured(outcome.error);
    return decidePreflight(outcome.result, {
      planned: nodes,
      nodelist: Boolean(job.submit.placement?.nodelist),
      placeWithout: (left) => this.placeWithout(job, left),
    });
  }

  private applyPreflight(job: JobRecord, start: Start, decision: PreflightDecision): void {
    const nodes = decision.action === 'leave-out' ? decision.nodes : [];
    const data = { action: decision.action, nodes, attempt: job.attempt };
    if (decision.action === 'fail') {
      // the note is the job's end: said once, as its reason
      this.events.append('job.preflight', job.id, { ...data, note: decision.note });
      this.scheduler.release(job.id);
      this.endQueued(job, 'failed', decision.note, PREFLIGHT_FAILED_STATUS);
      return;
    }
    this.preflightNote(job, decision.note, data);
    if (decision.action === 'pass') return this.launch(job, start);
    this.scheduler.release(job.id);
    // the exclusion path of a failed attempt's nodes: placement never picks them for this job again
    job.excluded = [...new Set([...job.excluded, ...decision.nodes])];
    this.repo.updateJob(job);
    this.scheduler.enqueue(queuedJob(job));
    this.scheduler.schedule();
  }

  /** The preflight's word becomes the queued job's reason, and its history's. */
  private preflightNote(job: JobRecord, note: string, data: Record<string, unknown>): void {
    job.reason = note;
    this.repo.updateJob(job);
    this.events.append('job.preflight', job.id, { ...data, note });
    this.emit('changed', job.id);
  }

  /** Why the job could not be placed on the idle ready cluster without `nodes` too; null when it could. */
  private placeWithout(job: JobRecord, nodes: readonly string[]): string | null {
    const trial = { ...queuedJob(job), restarting: false, excluded: new Set([...job.excluded, ...nodes]) };
    const ready = this.registry.candidates().sort((a, b) => naturalCompare(a.name, b.name));
    const placed = place(trial, new AllocationLedger(), new PlacementContext(ready, this.planOptions()));
    return placed.ok ? null : placed.reason;
  }

  /** A failed attempt is closed: the job waits in the queue for its next, keeping its place (its submission time). */
  private requeue(job: JobRecord): void {
    this.queued.set(job.id, job);
    this.scheduler.enqueue(queuedJob(job));
    this.wakeAfterDelay(job);
    this.emit('restarting', job.id);
    this.emit('changed', job.id);
    this.scheduler.schedule();
  }

  /** A restarting job's next attempt may not start before its restartAt: a pass then considers it again. */
  private wakeAfterDelay(job: JobRecord): void {
    const wait = job.restartAt === null ? 0 : job.restartAt - this.clock.now();
    if (wait <= 0) return;
    this.restartTimers.set(
      job.id,
      this.clock.after(wait, () => {
        this.restartTimers.delete(job.id);
        // a timer runs on a monotonic clock, restartAt on the wall's: after a step back the
        // pass would still hold the job, and no other timer would wake it
        this.wakeAfterDelay(job);
        this.scheduler.schedule();
      }),
    );
  }

  private stillQueued(id: string, waiting: string): void {
    const job = this.queued.get(id);
    const reason = job && job.attempt > 0 ? `${restartLabel(job)}: ${waiting}` : waiting;
    if (!job || job.reason === reason) return;
    const first = job.reason === 'submitted';
    job.reason = reason;
    this.repo.updateJob(job);
    if (first) this.events.append('job.queued', id, { reason });
    this.emit('changed', id);
  }

  /**
   * `rankd plan`: the rank map a job of this spec would get if submitted now, or, when it
   * would wait, its plan on the idle cluster and the reason. Nothing is stored.
   */
  preview(spec: PlacementSpec, priority: number | undefined, owner: string | null): PlanAnswer {
    const now = this.clock.now();
    const { job, idle } = admit(
      'preview',
      { command: ['true'], placement: spec, ...(priority === undefined ? {} : { priority }) },
      owner,
      now,
      this.registry.candidates(),
      this.planOptions(),
      this.scheduler.limits,
      this.registry.drained(),
    );
    const tried = this.scheduler.tryNow(job);
    return tried.start
      ? { ...tried.start.rankMap, schedule: { startsNow: true, reason: null } }
      : { ...idle, schedule: { startsNow: false, reason: tried.reason } };
  }

  /** Queued jobs in the order the scheduler will consider them. */
  queue(): Array<{ job: JobRecord; position: number }> {
    return this.scheduler.order().map((q, i) => ({ job: this.queued.get(q.id)!, position: i + 1 }));
  }

  /** The MASTER_PORT a job whose rank 0 lands on `node` gets now: the first not held by a live job. */
  pickPort(node: string): number {
    return this.ports.pick(node);
  }

  view(id: string): JobView | null {
    const queued = this.queued.get(id);
    if (queued) return jobView(queued, [], this.repo.attempts.list(id));
    const live = this.lifecycle.get(id);
    if (live) return jobView(live.job, live.ranks, this.repo.attempts.list(id));
    const job = this.repo.get(id);
    return job ? jobView(job, this.repo.ranks(job), this.repo.attempts.list(id)) : null;
  }

  /** The newest jobs that pass the filter, and whether more than `limit` of them do. */
  list(filter: JobFilter): JobList {
    // one more than asked for tells whether the answer leaves some off
    const records = this.repo.list({ ...filter, limit: filter.limit + 1 });
    const jobs = records
      .slice(0, filter.limit)
      .map((j) => jobSummary(this.lifecycle.get(j.id)?.job ?? this.queued.get(j.id) ?? j));
    return { jobs, more: records.length > filter.limit };
  }

  /** Who submitted a job: its owner's name, null when it has none, undefined when there is no such job. */
  owner(id: string): string | null | undefined {
    const current = this.current(id);
    if (current) return current.owner;
    return this.repo.get(id)?.owner;
  }

  /** The record of a queued or live job; undefined once it has ended (or never was). */
  current(id: string): Readonly<JobRecord> | undefined {
    return this.lifecycle.get(id)?.job ?? this.queued.get(id);
  }

  /** True when the job exists and has ended (its ranks are all gone). */
  isEnded(id: string): boolean {
    if (this.lifecycle.has(id) || this.queued.has(id)) return false;
    return this.repo.get(id) !== null;
  }

  cancel(id: string, why = 'cancelled by request'): JobView {
    const queued = this.queued.get(id);
    if (queued) return this.cancelQueued(queued, why);
    this.requireLive(id, 'cancel');
    this.lifecycle.stop(id, 'cancelled', why);
    return this.view(id)!;
  }

  /** A queued job leaves the queue: it never ran, so it ends at once. */
  private cancelQueued(job: JobRecord, why: string): JobView {
    // its check goes on to its end (its probes are bounded); what the job holds is freed then
    const preflight = this.preflighting.get(job.id);
    if (preflight) preflight.cancelled = true;
    const where = preflight
      ? 'during its preflight'
      : job.attempt > 0
        ? `while waiting for ${restartLabel(job)}`
        : 'while queued';
    return this.endQueued(job, 'cancelled', `${why} ${where}`, 130);
  }

  /** A queued job ends without a rank of its attempt having started: cancelled, or failed by its preflight. */
  private endQueued(job: JobRecord, state: 'cancelled' | 'failed', reason: string, exitCode: number): JobView {
    this.queued.delete(job.id);
    this.scheduler.dequeue(job.id);
    // ended during a --restart-delay: nothing starts
    this.restartTimers.get(job.id)?.();
    this.restartTimers.delete(job.id);
    this.lifecycle.forgetLastPort(job.id);
    const now = this.clock.now();
    Object.assign(job, { state, reason, exitCode, endedAt: now, restartAt: null });
    this.repo.updateJob(job);
    this.events.append('job.state', job.id, { from: 'queued', to: state, reason });
    this.emit('ended', job.id, state);
    this.emit('changed', job.id);
    return jobView(job, [], this.repo.attempts.list(job.id));
  }

  signal(id: string, signal: string, rank?: number): JobView {
    if (this.queued.has(id))
      throw new RankdError(ErrorCode.Conflict, `job ${id} is queued: it has no ranks to signal yet`);
    const live = this.requireLive(id, 'signal');
    if (rank !== undefined && !live.ranks[rank])
      throw new RankdError(ErrorCode.InvalidRequest, `job ${id} has no rank ${rank}`);
    const nodes = rank === undefined ? nodesOf(live) : [live.ranks[rank]!.node];
    for (const node of nodes)
      this.agents.send(node, {
        type: 'job.signal',
        jobId: live.attemptId,
        signal,
        ...(rank === undefined ? {} : { rank }),
      });
    this.events.append('job.signal', id, { signal, rank: rank ?? 'all', attempt: live.job.attempt });
    return this.view(id)!;
  }

  private onNodeState(change: NodeStateChange): void {
    if (change.to === 'lost') this.lifecycle.nodeLost(change.name);
  }

  /** What a job from before allocations holds: what its rank map uses (nothing where a node's facts are unknown). */
  private allocationFromMap(job: JobRecord) {
    const facts = (node: string) => this.registry.get(node)?.facts ?? null;
    const known = job.rankMap!.nodes.every((n) => facts(n.name) !== null);
    return known
      ? allocationOf(job.rankMap!, job.submit.placement ?? {}, (node) => facts(node)!)
      : { mode: 'share' as const, nodes: {} };
  }

  private requireLive(id: string, what: string): LiveJobView {
    const live = this.lifecycle.get(id);
    if (live) return live;
    const job = this.repo.get(id);
    if (!job) throw new RankdError(ErrorCode.NotFound, `unknown job "${id}"`);
    throw new RankdError(ErrorCode.JobEnded, `cannot ${what} job ${id}: it already ended (${job.state})`);
  }
}
