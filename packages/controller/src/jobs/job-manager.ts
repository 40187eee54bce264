// Jobs from submission to their last rank's exit.
//
// A submitted job is admitted (it can run on the ready cluster), queued, and started
// by the scheduler once what it asks for is free (schedule/). The manager keeps queued
// and live jobs in memory and writes every transition through to the
// store. A job ends only when every one of its ranks has a terminal state, so "no
// rank runs after its job ended" holds by construction. Fail-fast, cancel, timeout
// and node loss all take the same path: `stop()` records why, asks every agent of
// the job to end its ranks (SIGTERM, grace, SIGKILL), and the job closes when the
// last exit arrives.
import { EventEmitter } from 'node:events';
import {
  ErrorCode,
  RankdError,
  type CpuDefault,
  type JobState,
  type JobList,
  type JobSubmit,
  type JobView,
  type PlacementSpec,
  type PlanAnswer,
  type PmiFailed,
  type PmiJobSpec,
  type RankLaunch,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { NodeRegistry, NodeStateChange } from '../fleet/node-registry.js';
import type { GroupResolver, PlanOptions } from '../planner/index.js';
import { allocationOf } from '../schedule/allocation.js';
import type { UserLimits } from '../schedule/limits.js';
import { Scheduler } from '../schedule/scheduler.js';
import type { Start } from '../schedule/scheduling-pass.js';
import { processMapping } from '../pmi/process-mapping.js';
import type { EventsRepo } from '../store/events-repo.js';
import type { JobFilter, JobRecord, JobsRepo, RankRecord } from '../store/jobs-repo.js';
import { admit } from './job-admission.js';
import { endsAt, pendingRanks, queuedJob, queuedRecord } from './job-records.js';
import { newJobId } from './job-ids.js';
import { graceSeconds, jobSummary, jobView } from './job-view.js';
import type { LogStore } from './log-store.js';
import { MasterPorts } from './master-ports.js';
import { allEnded, allStarted, newLiveJob, type LiveJob, type PendingExit } from './live-job.js';
import { rankLaunches } from './rank-launches.js';
import { hoistSharedEnv } from './shared-env.js';
import { describeEnd, exitStatus, isTerminal } from './rank-status.js';

export { exitStatus, isTerminal } from './rank-status.js';
export { allEnded, allStarted, type LiveJob, type PendingExit } from './live-job.js';

/** How the manager reaches agents: the gateway's live links. */
export interface AgentSender {
  send(node: string, message: { type: string } & Record<string, unknown>): boolean;
}

export class JobManager extends EventEmitter<{ ended: [id: string, state: JobState]; changed: [string] }> {
  readonly live = new Map<string, LiveJob>();
  /** Queued jobs' records; the scheduler keeps their order. */
  private readonly queued = new Map<string, JobRecord>();
  readonly scheduler: Scheduler;
  private readonly ports = new MasterPorts();
  /**
   * Hooks of an MPI mode that starts its ranks its own way (Open MPI: openmpi/). startRanks
   * returns undefined for a job that is not its own, null once it has sent the starts, or
   * why a node cannot be reached; onStopping hears every stop(); while holdEnd says so,
   * a job whose ranks have all ended stays live (its launcher still runs): recheck() after.
   */
  startRanks: ((live: LiveJob, byNode: Map<string, RankLaunch[]>, leaseMs: number) => string | null | undefined) | null = null;
  onStopping: ((live: LiveJob, reason: string, graceMs: number) => void) | null = null;
  holdEnd: ((live: LiveJob) => boolean) | null = null;

  constructor(
    private readonly repo: JobsRepo,
    /** The history: rank events are appended here too, so that one log tells the whole story. */
    readonly events: EventsRepo,
    readonly logs: LogStore,
    private readonly registry: NodeRegistry,
    private readonly agents: AgentSender,
    private readonly log: Logger,
    /** --group against the inventory; globs over node names without one. */
    private readonly resolveGroup?: GroupResolver,
    limits: UserLimits = {},
    /** CPUs per rank for jobs without -c (`rankd controller --default-cpus-per-rank`). */
    private readonly defaultCpusPerRank: CpuDefault = 'share',
  ) {
    super();
    this.setMaxListeners(0);
    this.scheduler = new Scheduler(
      {
        nodes: () => this.registry.candidates(),
        drained: () => this.registry.drained(),
        planOptions: () => this.planOptions(),
        usageOf: (id) => {
          const job = this.live.get(id)?.job;
          return job && { owner: job.owner, cores: job.demand?.cores ?? 0 };
        },
        start: (start) => this.startQueued(start),
        waiting: (id, reason) => this.stillQueued(id, reason),
      },
      limits,
    );
    registry.on('state', (change) => this.onNodeState(change));
    // a node that is ready again, resumed, or reports new facts may let queued jobs start
    registry.on('changed', () => this.scheduler.schedule());
    // a drain starts nothing, but queued jobs that now wait on it should say so
    registry.on('drained', () => this.scheduler.schedule());
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
        continue;
      }
      this.scheduler.hold(job.id, job.allocation ?? this.allocationFromMap(job), endsAt(job));
      const ranks = this.repo.ranks(job);
      for (const r of ranks) {
        // the files are the truth for what is stored; the index may lag a crash
        const sizes = this.logs.open(job.id, r.rank);
        r.stdoutBytes = sizes.stdout;
        r.stderrBytes = sizes.stderr;
        // a crash can fall between a chunk's write and its rank.output event: this event
        // accounts for such bytes, so the history's offsets stay contiguous
        this.events.append('rank.output.size', `${job.id}/${r.rank}`, { ...sizes, reason: 'controller restarted' });
      }
      const live = this.track(job, ranks);
      this.ports.hold(job.rankMap.ranks[0]!.node, job.rankMap.masterPort);
      this.armTimeout(live);
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
    const now = Date.now();
    const { job: queued } = admit(newJobId(now), submit, owner, now, this.registry.candidates(), this.planOptions(), this.scheduler.limits, this.registry.drained());
    if (submit.immediate) {
      const tried = this.scheduler.tryNow(queued);
      if (!tried.starts) throw new RankdError(ErrorCode.WouldWait, `--immediate: the job cannot start now: ${tried.reason}`);
    }
    const job = queuedRecord(queued, submit, owner);
    this.repo.create(job);
    this.events.append('job.submitted', job.id, { worldSize: queued.demand.ranks, nodes: queued.demand.nodes, cores: queued.demand.cores, gpus: queued.demand.gpus, priority: queued.priority });
    this.queued.set(job.id, job);
    this.scheduler.enqueue(queued);
    this.scheduler.run();
    return { view: this.view(job.id)!, created: true };
  }

  /** The scheduler found room: the job's ranks are created on its rank map and started. */
  private startQueued({ job: q, rankMap, alloc }: Start): void {
    const job = this.queued.get(q.id);
    if (!job) return;
    this.queued.delete(q.id);
    Object.assign(job, { state: 'pending', reason: 'planned', rankMap, allocation: alloc });
    this.repo.start(job);
    const ranks = pendingRanks(job.id, rankMap);
    // the history holds every allocation, so that "no two jobs held one core" can be checked from it alone
    this.events.append('job.allocated', job.id, { mode: alloc.mode, nodes: alloc.nodes });
    this.events.append('job.state', job.id, { from: 'queued', to: 'pending', reason: job.reason });
    this.logs.begin(job.id);
    this.ports.hold(rankMap.ranks[0]!.node, rankMap.masterPort);
    const live = this.track(job, ranks);
    this.dispatch(live);
    this.emit('changed', job.id);
  }

  private stillQueued(id: string, reason: string): void {
    const job = this.queued.get(id);
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
    const now = Date.now();
    const { job, idle } = admit('preview', { command: ['true'], placement: spec, ...(priority === undefined ? {} : { priority }) }, owner, now, this.registry.candidates(), this.planOptions(), this.scheduler.limits, this.registry.drained());
    const tried = this.scheduler.tryNow(job);
    return tried.start ? { ...tried.start.rankMap, schedule: { startsNow: true, reason: null } } : { ...idle, schedule: { startsNow: false, reason: tried.reason } };
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
    if (queued) return jobView(queued, []);
    const live = this.live.get(id);
    if (live) return jobView(live.job, live.ranks);
    const job = this.repo.get(id);
    return job ? jobView(job, this.repo.ranks(job)) : null;
  }

  /** The newest jobs that pass the filter, and whether more than `limit` of them do. */
  list(filter: JobFilter): JobList {
    // one more than asked for tells whether the answer leaves some off
    const records = this.repo.list({ ...filter, limit: filter.limit + 1 });
    const jobs = records.slice(0, filter.limit).map((j) => jobSummary(this.live.get(j.id)?.job ?? this.queued.get(j.id) ?? j));
    return { jobs, more: records.length > filter.limit };
  }

  /** Who submitted a job: its owner's name, null when it has none, undefined when there is no such job. */
  owner(id: string): string | null | undefined {
    const current = this.live.get(id)?.job ?? this.queued.get(id);
    if (current) return current.owner;
    return this.repo.get(id)?.owner;
  }

  /** The record of a queued or live job; undefined once it has ended (or never was). */
  current(id: string): JobRecord | undefined {
    return this.live.get(id)?.job ?? this.queued.get(id);
  }

  /** True when the job exists and has ended (its ranks are all gone). */
  isEnded(id: string): boolean {
    if (this.live.has(id) || this.queued.has(id)) return false;
    return this.repo.get(id) !== null;
  }

  cancel(id: string, why = 'cancelled by request'): JobView {
    const queued = this.queued.get(id);
    if (queued) return this.cancelQueued(queued, why);
    const live = this.requireLive(id, 'cancel');
    this.stop(live, 'cancelled', why);
    return jobView(live.job, live.ranks);
  }

  /** A queued job leaves the queue: it never ran, so it ends at once. */
  private cancelQueued(job: JobRecord, why: string): JobView {
    this.queued.delete(job.id);
    this.scheduler.dequeue(job.id);
    const now = Date.now();
    Object.assign(job, { state: 'cancelled', reason: `${why} while queued`, exitCode: 130, endedAt: now });
    this.repo.updateJob(job);
    this.events.append('job.state', job.id, { from: 'queued', to: 'cancelled', reason: job.reason });
    this.emit('ended', job.id, 'cancelled');
    this.emit('changed', job.id);
    return jobView(job, []);
  }

  signal(id: string, signal: string, rank?: number): JobView {
    if (this.queued.has(id)) throw new RankdError(ErrorCode.Conflict, `job ${id} is queued: it has no ranks to signal yet`);
    const live = this.requireLive(id, 'signal');
    if (rank !== undefined && !live.ranks[rank]) throw new RankdError(ErrorCode.InvalidRequest, `job ${id} has no rank ${rank}`);
    const nodes = rank === undefined ? this.nodesOf(live) : [live.ranks[rank]!.node];
    for (const node of nodes) this.agents.send(node, { type: 'job.signal', jobId: id, signal, ...(rank === undefined ? {} : { rank }) });
    this.events.append('job.signal', id, { signal, rank: rank ?? 'all' });
    return jobView(live.job, live.ranks);
  }

  /** Ends the job: records why, asks every agent to stop its ranks, closes when they are gone. */
  stop(live: LiveJob, state: JobState, reason: string): void {
    if (live.stopping) return;
    live.stopping = { state, reason };
    this.setJob(live, { reason: `stopping: ${reason}` });
    this.events.append('job.stopping', live.job.id, { state, reason });
    const graceMs = Math.round(graceSeconds(live.job) * 1000);
    this.onStopping?.(live, reason, graceMs);
    for (const node of this.nodesOf(live)) {
      if (live.ranks.some((r) => r.node === node && !isTerminal(r))) {
        this.agents.send(node, { type: 'job.abort', jobId: live.job.id, graceMs, reason });
      }
    }
    // ranks never started anywhere cannot be stopped; they simply never ran
    for (const r of live.ranks) if (r.state === 'pending' && !this.registry.link(r.node)) this.endRank(live, r, 'unknown', `not started: ${reason}`);
    this.maybeFinish(live);
  }

  /** Sends the job.start of each node; a node without a live link fails the job. */
  dispatch(live: LiveJob, onlyNode?: string): void {
    const { job } = live;
    const byNode = rankLaunches(live, onlyNode);
    const leaseMs = this.registry.timing.lostAfterMs;
    const diverted = this.startRanks?.(live, byNode, leaseMs);
    if (typeof diverted === 'string') return this.stop(live, 'failed', diverted);
    if (diverted === null) byNode.clear();
    const pmi: PmiJobSpec | null = mpiMode(job) === 'pmi1' ? { size: job.rankMap!.worldSize, processMapping: processMapping(job.rankMap!) } : null;
    for (const [node, ranks] of byNode) {
      // each node's shared environment once, not once per rank (jobs/shared-env.ts)
      const env = hoistSharedEnv(ranks);
      const exportEnv = job.submit.exportEnv;
      if (!this.agents.send(node, { type: 'job.start', jobId: job.id, leaseMs, ranks, env, ...(exportEnv ? { exportEnv } : {}), ...(pmi ? { pmi } : {}) })) {
        this.stop(live, 'failed', `node ${node} is not connected`);
        return;
      }
    }
    if (job.state === 'pending') {
      this.setJob(live, { state: 'starting', reason: 'starting ranks', startedAt: Date.now() });
      this.armTimeout(live);
    }
  }

  /** Records a rank's end; fail-fast stops the rest of the job on a failure. */
  endRank(live: LiveJob, r: RankRecord, state: RankRecord['state'], error: string | null, exit?: PendingExit): void {
    if (isTerminal(r)) return;
    r.state = state;
    r.endedAt = exit?.endedAt ?? Date.now();
    r.exitCode = exit?.code ?? null;
    r.signal = exit?.signal ?? null;
    r.error = error;
    this.repo.updateRank(r);
    this.events.append('rank.exited', `${live.job.id}/${r.rank}`, { node: r.node, state, code: r.exitCode, signal: r.signal, error, stdout: r.stdoutBytes, stderr: r.stderrBytes });
    const status = exitStatus(r);
    if (status !== 0 && live.firstFailure === null) live.firstFailure = status;
    if (status !== 0 && !live.stopping && (live.job.submit.failPolicy ?? 'fail-fast') === 'fail-fast') {
      this.stop(live, state === 'unknown' ? 'lost' : 'failed', describeEnd(r));
    }
    this.maybeFinish(live);
    this.emit('changed', live.job.id);
  }

  /**
   * A rank ended the job through PMI: MPI_Abort (its exit code becomes the job's), or a
   * PMI connection closed before finalize. Fail-fast whatever the job's fail policy: the
   * other ranks would wait in the next fence forever.
   */
  pmiFailed(node: string, m: PmiFailed): void {
    const live = this.live.get(m.jobId);
    const r = live?.ranks[m.rank];
    if (!live || !r || r.node !== node) {
      this.log.warn({ node, jobId: m.jobId, rank: m.rank }, 'PMI failure of a rank that is not live on that node');
      return;
    }
    this.events.append('rank.pmi-failed', `${m.jobId}/${m.rank}`, { node, exitCode: m.exitCode, reason: m.reason });
    if (live.stopping) return;
    live.firstFailure ??= m.exitCode ?? 1;
    this.stop(live, 'failed', m.reason);
  }

  /** The nodes of a live PMI job in node order (the fence waits for each), or null. */
  pmiNodes(jobId: string): string[] | null {
    const live = this.live.get(jobId);
    return live && mpiMode(live.job) === 'pmi1' ? live.job.rankMap!.nodes.map((n) => n.name) : null;
  }

  /** Fails a live job (the PMI exchange found a node breaking it). */
  fail(jobId: string, reason: string): void {
    const live = this.live.get(jobId);
    if (live) this.stop(live, 'failed', reason);
  }

  setJob(live: LiveJob, patch: Partial<Pick<JobRecord, 'state' | 'reason' | 'startedAt' | 'endedAt' | 'exitCode'>>): void {
    const before = live.job.state;
    Object.assign(live.job, patch);
    this.repo.updateJob(live.job);
    if (patch.state && patch.state !== before) this.events.append('job.state', live.job.id, { from: before, to: patch.state, reason: live.job.reason });
  }

  nodesOf(live: LiveJob): string[] {
    return [...new Set(live.ranks.map((r) => r.node))];
  }

  private maybeFinish(live: LiveJob): void {
    // already finished: a rank's end can stop the job (which finishes it) and then ask again
    if (this.live.get(live.job.id) !== live) return;
    if (!allEnded(live)) {
      if (live.job.state === 'starting' && allStarted(live)) this.setJob(live, { state: 'running', reason: 'all ranks started' });
      return;
    }
    if (this.holdEnd?.(live)) return;
    const failed = live.ranks.find((r) => exitStatus(r) !== 0);
    const unknown = live.ranks.find((r) => r.state === 'unknown');
    let state: JobState;
    let reason: string;
    if (live.stopping) ({ state, reason } = live.stopping);
    else if (unknown) [state, reason] = ['lost', describeEnd(unknown)];
    else if (failed) [state, reason] = ['failed', describeEnd(failed)];
    else [state, reason] = ['succeeded', live.ranks.length === 1 ? 'rank 0 exited 0' : `all ${live.ranks.length} ranks exited 0`];
    const exitCode = state === 'succeeded' ? 0 : (live.firstFailure ?? 1);
    if (live.timeout) clearTimeout(live.timeout);
    this.setJob(live, { state, reason, exitCode, endedAt: Date.now(), startedAt: live.job.startedAt ?? Date.now() });
    for (const r of live.ranks) this.repo.updateBytes(r);
    this.live.delete(live.job.id);
    this.ports.release(live.job.rankMap!.ranks[0]!.node, live.job.rankMap!.masterPort);
    // its last rank's exit is recorded: what it held is free, and queued jobs may start
    this.events.append('job.released', live.job.id, {});
    this.scheduler.release(live.job.id);
    this.log.info({ job: live.job.id, state, reason, exitCode }, 'job ended');
    this.emit('ended', live.job.id, state);
    this.emit('changed', live.job.id);
    // Release an agent's spool once every byte of its ranks is stored; a node with a rank in
    // an unknown state keeps its spool for a resume (its next ranks.report releases it). Judged
    // per node: a lost node must not leave the job's spool behind on all the others.
    const keepSpool = new Set(live.ranks.filter((r) => r.state === 'unknown').map((r) => r.node));
    for (const node of this.nodesOf(live)) {
      if (!keepSpool.has(node)) this.agents.send(node, { type: 'job.release', jobId: live.job.id });
    }
    this.logs.close(live.job.id);
  }

  /** Judges again whether a live job has ended: after a holdEnd hook lets it go. */
  recheck(id: string): void {
    const live = this.live.get(id);
    if (live) this.maybeFinish(live);
  }

  private track(job: JobRecord, ranks: RankRecord[]): LiveJob {
    const live = newLiveJob(job, ranks);
    this.live.set(job.id, live);
    return live;
  }

  private armTimeout(live: LiveJob): void {
    const seconds = live.job.submit.timeout;
    if (!seconds || live.timeout || live.job.startedAt === null) return;
    const remaining = live.job.startedAt + seconds * 1000 - Date.now();
    live.timeout = setTimeout(() => this.stop(live, 'timed-out', `timed out after ${seconds} s`), Math.max(0, remaining));
    live.timeout.unref();
  }

  private onNodeState(change: NodeStateChange): void {
    if (change.to !== 'lost') return;
    for (const live of [...this.live.values()]) {
      const onNode = live.ranks.filter((r) => r.node === change.name && !isTerminal(r));
      if (onNode.length === 0) continue;
      if (!live.stopping) this.stop(live, 'lost', `node ${change.name} lost`);
      for (const r of onNode) if (this.live.has(live.job.id)) this.endRank(live, r, 'unknown', `node ${change.name} lost`);
    }
  }

  /** What a job from before allocations holds: what its rank map uses (nothing where a node's facts are unknown). */
  private allocationFromMap(job: JobRecord) {
    const facts = (node: string) => this.registry.get(node)?.facts ?? null;
    const known = job.rankMap!.nodes.every((n) => facts(n.name) !== null);
    return known ? allocationOf(job.rankMap!, job.submit.placement ?? {}, (node) => facts(node)!) : { mode: 'share' as const, nodes: {} };
  }

  private requireLive(id: string, what: string): LiveJob {
    const live = this.live.get(id);
    if (live) return live;
    const job = this.repo.get(id);
    if (!job) throw new RankdError(ErrorCode.NotFound, `unknown job "${id}"`);
    throw new RankdError(ErrorCode.JobEnded, `cannot ${what} job ${id}: it already ended (${job.state})`);
  }
}

function mpiMode(job: JobRecord) {
  return job.submit.mpi ?? 'pmi1';
}
