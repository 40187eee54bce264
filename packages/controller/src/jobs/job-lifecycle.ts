// The one owner of a job's life from the moment it is planned until its last rank's exit.
//
// Live jobs are held here and nowhere else: agents' reports (rank-events.ts), the MPI modes
// (mpi-strategy.ts), the PMI exchange and the routes change a job only through the
// transitions below, and everyone else reads a LiveJobView. Each transition is written once
// and writes through to the store, so a controller killed at any moment restarts knowing
// what ran where. A job ends only when every one of its ranks has a terminal state, so
// "no rank runs after its job ended" holds by construction. Fail-fast, cancel, timeout and
// node loss all take the same path: `stop()` records why, asks every agent of the job to
// end its ranks (SIGTERM, grace, SIGKILL), and the job closes when the last exit arrives.
//
// A job runs as attempts (rankd run --max-restarts). When the last rank of a failed attempt
// has ended, restart-policy.ts says whether another follows; if so the attempt closes as a
// job would (what it held is freed, its agents drop their spools), and the job goes back to
// the queue under the same id, without the nodes that failed it, for the scheduler to plan
// again. Agents know each attempt by its own id (attemptId()): the wire-facing transitions
// below take that id, the API-facing ones (stop, get) the job's.
import type { AttemptFailure, Binding, JobState, PmiFailed, RankMap, StreamName } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { Allocation } from '@rankd/planner';
import type { EventsRepo } from '../store/events-repo.js';
import type { AgentSender } from '../gateway/agent-sender.js';
import type { AttemptRecord, NodeFailure } from './attempts-repo.js';
import type { Clock } from './clock.js';
import { endsAt, pendingRanks, type JobRecord, type RankRecord } from './job-records.js';
import { lastLines } from './last-lines.js';
import { graceSeconds, plannedCpus } from './job-view.js';
import type { JobsRepo } from './jobs-repo.js';
import { allEnded, allStarted, newLiveJob, nodesOf } from './live-job.js';
import type { LiveJob, LiveJobView, PendingExit } from './live-job.js';
import type { LogStore } from './log-store.js';
import type { MasterPorts } from './master-ports.js';
import { mpiModeOf, type MpiStrategies, type MpiStrategy } from './mpi-strategy.js';
import { rankLaunches } from './rank-launches.js';
import { describeEnd, exitStatus, isTerminal } from './rank-status.js';
import { failedNodes, restartDelayMs, restartLabel, restarts } from './restart-policy.js';

/** What the lifecycle tells the job manager. */
export interface LifecycleHooks {
  /** A job's record or one of its ranks changed. */
  changed(id: string): void;
  /** A job ended in `state`. */
  ended(id: string, state: JobState): void;
  /** What a job held is free: queued jobs may start. */
  released(id: string): void;
  /** An attempt is over (its ranks have ended, the job may go on): what was kept for it (PMI fences) may go. */
  attemptEnded(attemptId: string): void;
  /** A failed attempt is closed and the job is queued again for its next one (`job.restartAt` says when). */
  restarting(job: JobRecord): void;
  /** Nodes failed an attempt (lost, or a hardware-like signal): recorded, for the controller's --exclude-after. */
  nodesFailed(failures: readonly NodeFailure[]): void;
}

export interface LifecycleDeps {
  repo: Pick<JobsRepo, 'start' | 'restart' | 'end' | 'updateJob' | 'updateRank' | 'updateBytes' | 'attempts'>;
  /** The history: every transition is appended here too, so that one log tells the whole story. */
  events: Pick<EventsRepo, 'append'>;
  logs: Pick<LogStore, 'begin' | 'close' | 'read' | 'size'>;
  agents: AgentSender;
  /** Whether the node's agent is connected now. */
  connected(node: string): boolean;
  /** The lease every start carries: how long an agent keeps ranks without hearing from here. */
  leaseMs(): number;
  /** The MASTER_PORT each live job holds on its rank 0's node. */
  ports: MasterPorts;
  modes: MpiStrategies;
  clock: Clock;
  log: Logger;
  hooks: LifecycleHooks;
}

type JobPatch = Partial<Pick<JobRecord, 'state' | 'reason' | 'startedAt' | 'endedAt' | 'exitCode'>>;

/** What an agent says of a rank it started. */
export interface RankStart {
  pid: number;
  /** Null when the agent's time did not parse: the controller's now stands in. */
  startedAt: number | null;
  binding: Binding;
  warnings: string[];
}

export class JobLifecycle {
  /** Live jobs by job id. */
  private readonly live = new Map<string, LiveJob>();
  /** The same, by the id their agents know the current attempt by. */
  private readonly byAttempt = new Map<string, LiveJob>();
  /**
   * The MASTER_PORT of a restarting job's last attempt, held until its next attempt is
   * planned: that attempt gets a fresh rendezvous port, never one a dying TCPStore of the
   * last may still hold in TIME_WAIT.
   */
  private readonly lastPorts = new Map<string, { node: string; port: number }>();

  constructor(private readonly deps: LifecycleDeps) {}

  /** Every live job by job id, read-only. */
  get view(): ReadonlyMap<string, LiveJobView> {
    return this.live;
  }

  /** A live job by its id (the API's). */
  get(id: string): LiveJobView | undefined {
    return this.live.get(id);
  }

  has(id: string): boolean {
    return this.live.has(id);
  }

  /** A live job by the id of its current attempt (the agents'); an ended attempt's id finds nothing. */
  attempt(attemptId: string): LiveJobView | undefined {
    return this.byAttempt.get(attemptId);
  }

  /** The nodes of a live PMI attempt in node order (the fence waits for each), or null. */
  pmiNodes(attemptId: string): string[] | null {
    const live = this.byAttempt.get(attemptId);
    return live && mpiModeOf(live.job) === 'pmi1' ? live.job.rankMap!.nodes.map((n) => n.name) : null;
  }

  /**
   * The scheduler found room for a queued job: it is planned on `rankMap`, holding `alloc`,
   * its ranks are created pending, and their starts are sent.
   */
  begin(job: JobRecord, rankMap: RankMap, alloc: Allocation): void {
    Object.assign(job, { state: 'pending', reason: 'planned', rankMap, allocation: alloc, restartAt: null });
    const attempt = newAttempt(job, rankMap, this.deps.clock.now());
    this.deps.repo.start(job, attempt);
    const ranks = pendingRanks(job.id, job.attempt, rankMap);
    // the history holds every allocation, so that "no two jobs held one core" can be checked from it alone
    const { attempt: k } = job;
    this.deps.events.append('job.allocated', job.id, { mode: alloc.mode, nodes: alloc.nodes, attempt: k });
    this.deps.events.append('job.state', job.id, { from: 'queued', to: 'pending', reason: job.reason });
    const live = this.track(job, ranks);
    live.attemptStartedAt = attempt.startedAt;
    this.deps.logs.begin(live.attemptId);
    this.deps.ports.hold(rankMap.ranks[0]!.node, rankMap.masterPort);
    this.forgetLastPort(job.id);
    this.dispatch(live);
  }

  /** A restarting job was planned again, or ended while it waited: its last attempt's port is free. */
  forgetLastPort(jobId: string): void {
    const last = this.lastPorts.get(jobId);
    if (!last) return;
    this.lastPorts.delete(jobId);
    this.deps.ports.release(last.node, last.port);
  }

  /** A job that was live when the controller stopped, with its stored ranks: its agents report and resume it. */
  adopt(job: JobRecord, ranks: RankRecord[]): void {
    const live = this.track(job, ranks);
    const stored = this.deps.repo.attempts.list(job.id).find((a) => a.attempt === job.attempt);
    live.attemptStartedAt = stored?.startedAt ?? job.startedAt ?? this.deps.clock.now();
    // an attempt that was being stopped goes on stopping for the same end, with the same first failure
    if (stored && stored.endedAt === null && stored.state !== 'running') {
      live.stopping = { state: stored.state, reason: stored.reason };
      live.firstFailure = stored.exitCode;
      live.firstFailedRank = stored.firstFailure?.rank ?? null;
      for (const node of stored.excluded) live.lostNodes.add(node);
    }
    this.deps.ports.hold(job.rankMap!.ranks[0]!.node, job.rankMap!.masterPort);
    this.armTimeout(live);
    // its last rank's end was stored but the controller stopped before it judged the attempt:
    // judge it now, once (no agent report would bring it back)
    this.maybeFinish(live);
  }

  /** An agent started a rank; a binding other than the plan's fails the job. */
  rankStarted(attemptId: string, rank: number, node: string, start: RankStart): void {
    const live = this.byAttempt.get(attemptId);
    const r = live?.ranks[rank];
    // not pending: a repeated report after a reconnect
    if (!live || !r || r.state !== 'pending') return;
    r.state = 'running';
    r.pid = start.pid;
    r.startedAt = start.startedAt ?? this.deps.clock.now();
    r.binding = start.binding;
    r.warnings = start.warnings;
    this.deps.repo.updateRank(r);
    this.deps.events.append('rank.started', `${attemptId}/${rank}`, { node, pid: start.pid });
    const mismatch = bindingMismatch(() => plannedCpus(live.job.rankMap!.ranks[rank]), start.binding);
    if (mismatch && !live.stopping) live.firstFailedRank ??= rank;
    if (mismatch) this.stopLive(live, 'failed', `rank ${rank} on ${node}: binding mismatch: ${mismatch}`);
    this.promoteWhenStarted(live);
    this.deps.hooks.changed(live.job.id);
  }

  /**
   * A rank's stream now holds `size` bytes. True when that completes an exit that was waiting
   * for the output (the rank has ended).
   */
  outputStored(attemptId: string, rank: number, stream: StreamName, size: number): boolean {
    const live = this.byAttempt.get(attemptId);
    const r = live?.ranks[rank];
    if (!live || !r) return false;
    if (stream === 'stdout') r.stdoutBytes = size;
    else r.stderrBytes = size;
    const pending = live.pendingExits.get(rank);
    if (!pending || !hasAll(r, pending)) return false;
    this.applyExit(live, r, pending);
    return true;
  }

  /**
   * An agent reports a rank's exit. True when the rank has ended (now, or before); false
   * when its exit waits for output that has not arrived yet (the caller asks the agent to
   * resume it).
   */
  exitReported(attemptId: string, rank: number, exit: PendingExit): boolean {
    const live = this.byAttempt.get(attemptId);
    const r = live?.ranks[rank];
    if (!live || !r) return false;
    if (isTerminal(r)) return true;
    if (hasAll(r, exit)) {
      this.applyExit(live, r, exit);
      return true;
    }
    live.pendingExits.set(rank, exit);
    return false;
  }

  /**
   * After an agent (re)connected and reported the ranks it holds (`reported`, as
   * "attempt id/rank"): a started rank it no longer knows has an unknown end, and ranks of
   * the node that never started are started now.
   */
  nodeReported(node: string, reported: ReadonlySet<string>): void {
    for (const live of [...this.live.values()]) {
      const held = (r: RankRecord) => reported.has(`${live.attemptId}/${r.rank}`);
      for (const r of live.ranks) {
        if (r.node !== node || held(r) || isTerminal(r)) continue;
        if (r.state === 'pending') continue; // dispatched below
        this.endRank(live, r, 'unknown', `agent on ${node} no longer knows rank ${r.rank}`);
      }
      const unstarted = (r: RankRecord) => r.node === node && r.state === 'pending' && !held(r);
      if (this.byAttempt.get(live.attemptId) === live && !live.stopping && live.ranks.some(unstarted))
        this.dispatch(live, node);
    }
  }

  /** A node was lost: every job with a rank there stops, and those ranks' ends are unknown. */
  nodeLost(name: string): void {
    for (const live of [...this.live.values()]) {
      const onNode = live.ranks.filter((r) => r.node === name && !isTerminal(r));
      if (onNode.length === 0) continue;
      live.lostNodes.add(name);
      if (live.stopping) this.recordStop(live);
      if (!live.stopping) live.firstFailedRank ??= onNode[0]!.rank;
      if (!live.stopping) this.stopLive(live, 'lost', `node ${name} lost`);
      for (const r of onNode) if (this.isLive(live)) this.endRank(live, r, 'unknown', `node ${name} lost`);
    }
  }

  /** Ends the job: records why, asks every agent to stop its ranks, closes when they are gone. */
  stop(id: string, state: JobState, reason: string): void {
    const live = this.live.get(id);
    if (!live) return;
    // an attempt stopped for a failure would be followed by another: a cancel makes it the last
    const failing = live.stopping?.state === 'failed' || live.stopping?.state === 'lost';
    if (failing && state === 'cancelled') {
      live.stopping = { state, reason };
      this.setJob(live, { reason: `stopping: ${reason}` });
      this.recordStop(live);
      this.deps.events.append('job.stopping', live.job.id, { state, reason, attempt: live.job.attempt });
      return;
    }
    this.stopLive(live, state, reason);
  }

  /** Fails a live attempt (the PMI exchange or its MPI mode found it broken); one already stopping keeps its reason. */
  fail(attemptId: string, reason: string): void {
    const live = this.byAttempt.get(attemptId);
    if (live) this.stopLive(live, 'failed', reason);
  }

  /**
   * A rank ended the job through PMI: MPI_Abort (its exit code becomes the job's), or a
   * PMI connection closed before finalize. Fail-fast whatever the job's fail policy: the
   * other ranks would wait in the next fence forever.
   */
  pmiFailed(node: string, m: PmiFailed): void {
    const live = this.byAttempt.get(m.jobId);
    const r = live?.ranks[m.rank];
    if (!live || !r || r.node !== node) {
      this.deps.log.warn({ node, jobId: m.jobId, rank: m.rank }, 'PMI failure of a rank that is not live on that node');
      return;
    }
    const failed = { node, exitCode: m.exitCode, reason: m.reason };
    this.deps.events.append('rank.pmi-failed', `${m.jobId}/${m.rank}`, failed);
    if (live.stopping) return;
    live.firstFailure ??= m.exitCode ?? 1;
    live.firstFailedRank ??= m.rank;
    this.stopLive(live, 'failed', m.reason);
  }

  /** Judges again whether a live attempt has ended: after its MPI mode stopped holding it (holdsEnd). */
  recheck(attemptId: string): void {
    const live = this.byAttempt.get(attemptId);
    if (live) this.maybeFinish(live);
  }

  private track(job: JobRecord, ranks: RankRecord[]): LiveJob {
    const live = newLiveJob(job, ranks);
    this.live.set(job.id, live);
    this.byAttempt.set(live.attemptId, live);
    return live;
  }

  private isLive(live: LiveJob): boolean {
    return this.byAttempt.get(live.attemptId) === live;
  }

  private modeOf(live: LiveJob): MpiStrategy {
    return this.deps.modes[mpiModeOf(live.job)];
  }

  /**
   * Sends the starts of the job's pending ranks (on `onlyNode` alone, when given); a node
   * that cannot be reached fails the job.
   */
  private dispatch(live: LiveJob, onlyNode?: string): void {
    const why = this.modeOf(live).startRanks(live, rankLaunches(live, onlyNode), this.deps.leaseMs());
    if (why !== null) return this.stopLive(live, 'failed', why);
    if (live.job.state === 'pending') {
      // a restarted job keeps its first start: --timeout bounds the whole job, as Slurm's time limit does
      const startedAt = live.job.startedAt ?? this.deps.clock.now();
      this.setJob(live, { state: 'starting', reason: 'starting ranks', startedAt });
      this.armTimeout(live);
    }
  }

  private stopLive(live: LiveJob, state: JobState, reason: string): void {
    if (live.stopping) return;
    live.stopping = { state, reason };
    this.setJob(live, { reason: `stopping: ${reason}` });
    this.recordStop(live);
    this.deps.events.append('job.stopping', live.job.id, { state, reason, attempt: live.job.attempt });
    const graceMs = Math.round(graceSeconds(live.job) * 1000);
    this.modeOf(live).stopping(live, reason, graceMs);
    // one pass over the ranks, not one scan per node: at 2,000 nodes × 8 ranks the scans cost
    // the controller's one thread hundreds of ms at every stop (a lost node, fail-fast, cancel)
    const holding = new Set<string>();
    for (const r of live.ranks) if (!isTerminal(r)) holding.add(r.node);
    for (const node of nodesOf(live)) {
      if (holding.has(node)) this.deps.agents.send(node, { type: 'job.abort', jobId: live.attemptId, graceMs, reason });
    }
    // ranks never started anywhere cannot be stopped; they simply never ran
    for (const r of live.ranks) {
      if (r.state !== 'pending' || this.deps.connected(r.node)) continue;
      this.endRank(live, r, 'unknown', `not started: ${reason}`);
    }
    this.maybeFinish(live);
  }

  /**
   * Stores the end a stopped attempt is stopping for, its first failure and the nodes lost so
   * far in its row (still without an end): a controller restarted before its last rank's exit
   * (adopt) ends it the same way, so a cancelled job is not restarted, nor a failure misnamed.
   */
  private recordStop(live: LiveJob): void {
    const { state, reason } = live.stopping!;
    this.deps.repo.attempts.write({
      ...newAttempt(live.job, live.job.rankMap!, live.attemptStartedAt),
      state,
      reason,
      exitCode: live.firstFailure,
      firstFailure: this.failureOf(live),
      excluded: [...live.lostNodes],
    });
  }

  private applyExit(live: LiveJob, r: RankRecord, exit: PendingExit): void {
    live.pendingExits.delete(r.rank);
    if (exit.error) {
      const state = r.state === 'pending' ? 'failed-to-start' : 'unknown';
      this.endRank(live, r, state, `${exit.error.message} (${exit.error.code})`, exit);
    } else if (exit.code === null && exit.signal === null) {
      this.endRank(live, r, 'unknown', 'no exit status recorded', exit);
    } else {
      this.endRank(live, r, 'exited', null, exit);
    }
  }

  /** Records a rank's end; fail-fast stops the rest of the job on a failure. */
  private endRank(
    live: LiveJob,
    r: RankRecord,
    state: RankRecord['state'],
    error: string | null,
    exit?: PendingExit,
  ): void {
    if (isTerminal(r)) return;
    r.state = state;
    r.endedAt = exit?.endedAt ?? this.deps.clock.now();
    r.exitCode = exit?.code ?? null;
    r.signal = exit?.signal ?? null;
    r.error = error;
    this.deps.repo.updateRank(r);
    const { node, exitCode: code, signal, stdoutBytes: stdout, stderrBytes: stderr } = r;
    const exited = { node, state, code, signal, error, stdout, stderr };
    this.deps.events.append('rank.exited', `${live.attemptId}/${r.rank}`, exited);
    const status = exitStatus(r);
    if (status !== 0 && live.firstFailure === null) live.firstFailure = status;
    if (status !== 0 && !live.stopping) live.firstFailedRank ??= r.rank;
    if (status !== 0 && !live.stopping && (live.job.submit.failPolicy ?? 'fail-fast') === 'fail-fast') {
      this.stopLive(live, state === 'unknown' ? 'lost' : 'failed', describeEnd(r));
    }
    this.maybeFinish(live);
    this.deps.hooks.changed(live.job.id);
  }

  private setJob(live: LiveJob, patch: JobPatch): void {
    const before = live.job.state;
    Object.assign(live.job, patch);
    this.deps.repo.updateJob(live.job);
    if (patch.state && patch.state !== before) {
      this.deps.events.append('job.state', live.job.id, { from: before, to: patch.state, reason: live.job.reason });
    }
  }

  /** starting → running, once no rank is pending. */
  private promoteWhenStarted(live: LiveJob): void {
    if (live.job.state !== 'starting' || !allStarted(live)) return;
    this.setJob(live, { state: 'running', reason: 'all ranks started' });
  }

  private maybeFinish(live: LiveJob): void {
    // already finished: a rank's end can stop the job (which finishes it) and then ask again
    if (!this.isLive(live)) return;
    if (!allEnded(live)) return this.promoteWhenStarted(live);
    if (this.modeOf(live).holdsEnd(live)) return;
    const { state, reason } = endOf(live);
    this.finish(live, state, reason);
  }

  /**
   * The attempt's last rank has ended: the attempt is recorded and closed (what it held is
   * freed, its agents drop their spools), and then either the job ends with it or, when
   * restart-policy.ts says so, goes back to the queue for its next attempt.
   */
  private finish(live: LiveJob, state: JobState, reason: string): void {
    const { job } = live;
    const now = this.deps.clock.now();
    const failure = this.failureOf(live);
    const exitCode = state === 'succeeded' ? 0 : (live.firstFailure ?? failureStatus(live, failure) ?? 1);
    const plan = job.rankMap!;
    const attempt: AttemptRecord = {
      ...newAttempt(job, plan, live.attemptStartedAt),
      state,
      reason,
      endedAt: now,
      exitCode,
      firstFailure: failure,
      excluded: failedNodes(live.lostNodes, failure),
    };
    const failures = attempt.excluded.map((node) => ({ node, at: now, jobId: job.id, attempt: job.attempt, reason }));
    live.cancelTimeout?.();
    for (const r of live.ranks) this.deps.repo.updateBytes(r);
    // --timeout bounds the whole job: once it is spent, no attempt follows (it would be stopped at its start)
    if (restarts(job, state, exitCode) && now < endsAt(job)) this.requeue(live, attempt, failures, now);
    else this.end(live, attempt, failures, now);
    this.close(live, plan);
    if (failures.length > 0) this.deps.hooks.nodesFailed(failures);
  }

  /** The job ends with this attempt. */
  private end(live: LiveJob, attempt: AttemptRecord, failures: NodeFailure[], now: number): void {
    const { job } = live;
    const { state, reason, exitCode } = attempt;
    const before = job.state;
    Object.assign(job, { state, reason, exitCode, endedAt: now, startedAt: job.startedAt ?? now });
    this.deps.repo.end(job, attempt, failures);
    if (state !== before) this.deps.events.append('job.state', job.id, { from: before, to: state, reason });
    this.deps.log.info({ job: job.id, state, reason, exitCode, attempt: job.attempt }, 'job ended');
  }

  /** The job goes back to the queue for its next attempt, without the nodes that failed this one. */
  private requeue(live: LiveJob, attempt: AttemptRecord, failures: NodeFailure[], now: number): void {
    const { job } = live;
    const { excluded } = attempt;
    const history = [...this.deps.repo.attempts.list(job.id).filter((a) => a.attempt < job.attempt), attempt];
    const delayMs = restartDelayMs(job.submit.restartDelay ?? 0, history);
    const ended: AttemptRecord = { ...attempt, restartDelayMs: delayMs };
    const from = job.state;
    Object.assign(job, {
      state: 'queued',
      attempt: job.attempt + 1,
      excluded: [...new Set([...job.excluded, ...excluded])],
      restartAt: now + delayMs,
      rankMap: null,
      allocation: null,
    });
    job.reason = `${restartLabel(job)}: after ${attempt.reason}`;
    this.deps.repo.restart(job, ended, failures);
    this.deps.events.append('job.attempt', job.id, {
      attempt: attempt.attempt,
      state: attempt.state,
      reason: attempt.reason,
      excluded,
      delayMs,
    });
    this.deps.events.append('job.state', job.id, { from, to: 'queued', reason: job.reason });
    this.deps.log.info(
      { job: job.id, attempt: attempt.attempt, reason: attempt.reason, excluded, delayMs },
      'job restarts',
    );
  }

  /** What the attempt held is freed and its agents drop their spools; the job is no longer live here. */
  private close(live: LiveJob, plan: RankMap): void {
    const { job, attemptId } = live;
    this.live.delete(job.id);
    this.byAttempt.delete(attemptId);
    const port = { node: plan.ranks[0]!.node, port: plan.masterPort };
    if (job.state === 'queued') this.lastPorts.set(job.id, port);
    else this.deps.ports.release(port.node, port.port);
    // its last rank's exit is recorded: what it held is free, and queued jobs may start
    this.deps.events.append('job.released', job.id, { attempt: live.ranks[0]!.attempt });
    this.deps.hooks.released(job.id);
    this.modeOf(live).released(attemptId);
    this.deps.hooks.attemptEnded(attemptId);
    if (job.state === 'queued') this.deps.hooks.restarting(job);
    else this.deps.hooks.ended(job.id, job.state);
    this.deps.hooks.changed(job.id);
    // Release an agent's spool once every byte of its ranks is stored; a node with a rank in
    // an unknown state keeps its spool for a resume (its next ranks.report releases it). Judged
    // per node: a lost node must not leave the job's spool behind on all the others.
    const keepSpool = new Set(live.ranks.filter((r) => r.state === 'unknown').map((r) => r.node));
    for (const node of nodesOf(live)) {
      if (!keepSpool.has(node)) this.deps.agents.send(node, { type: 'job.release', jobId: attemptId });
    }
    this.deps.logs.close(attemptId);
  }

  /** The first failure of an attempt, with the last lines its rank wrote to stderr; null when no rank failed it. */
  private failureOf(live: LiveJob): AttemptFailure | null {
    // ranks that ended on their own (--fail-policy wait) but whose order of arrival a controller
    // restart lost: the first failed rank to end stands in; a stop's own SIGTERMs are no failure
    const r =
      live.firstFailedRank !== null
        ? live.ranks[live.firstFailedRank]
        : live.stopping
          ? undefined
          : firstToFail(live.ranks);
    if (!r) return null;
    const { rank, node, state, exitCode, signal } = r;
    const lines = lastLines(this.deps.logs, live.attemptId, rank, 'stderr');
    return { rank, node, state, exitCode, signal, reason: describeEnd(r), lastLines: lines };
  }

  private armTimeout(live: LiveJob): void {
    const seconds = live.job.submit.timeout;
    if (!seconds || live.cancelTimeout || live.job.startedAt === null) return;
    const remaining = live.job.startedAt + seconds * 1000 - this.deps.clock.now();
    const fire = () => this.stopLive(live, 'timed-out', `timed out after ${seconds} s`);
    live.cancelTimeout = this.deps.clock.after(Math.max(0, remaining), fire);
  }
}

/** The failed rank that ended first, by its recorded end. */
function firstToFail(ranks: readonly RankRecord[]): RankRecord | undefined {
  let first: RankRecord | undefined;
  for (const r of ranks) {
    if (!isTerminal(r) || exitStatus(r) === 0) continue;
    if (!first || (r.endedAt ?? Infinity) < (first.endedAt ?? Infinity)) first = r;
  }
  return first;
}

/** The status of the failure's rank, when the attempt has one. */
function failureStatus(live: LiveJob, failure: AttemptFailure | null): number | undefined {
  const r = failure ? live.ranks[failure.rank] : undefined;
  return r ? exitStatus(r) : undefined;
}

/** The row of an attempt that starts now on `rankMap`. */
function newAttempt(job: JobRecord, rankMap: RankMap, now: number): AttemptRecord {
  return {
    jobId: job.id,
    attempt: job.attempt,
    state: 'running',
    reason: 'started',
    nodes: rankMap.nodes.map((n) => n.name),
    startedAt: now,
    endedAt: null,
    exitCode: null,
    firstFailure: null,
    excluded: [],
    restartDelayMs: null,
  };
}

/** The state a job whose ranks have all ended ends in, and why. */
function endOf(live: LiveJob): { state: JobState; reason: string } {
  if (live.stopping) return live.stopping;
  const unknown = live.ranks.find((r) => r.state === 'unknown');
  if (unknown) return { state: 'lost', reason: describeEnd(unknown) };
  const failed = live.ranks.find((r) => exitStatus(r) !== 0);
  if (failed) return { state: 'failed', reason: describeEnd(failed) };
  const n = live.ranks.length;
  return { state: 'succeeded', reason: n === 1 ? 'rank 0 exited 0' : `all ${n} ranks exited 0` };
}

function hasAll(r: RankRecord, exit: PendingExit): boolean {
  return r.stdoutBytes >= exit.outputBytes.stdout && r.stderrBytes >= exit.outputBytes.stderr;
}

/**
 * Why the binding differs from the plan, or null. The agent compares what it applied
 * with /proc/<pid>/status; a rank that exited before it could be read has no CPUs
 * to show and is not a mismatch.
 */
function bindingMismatch(plannedCpus: () => number[], binding: Binding): string | null {
  if (binding.verified || binding.cpus.length === 0) return null;
  return binding.detail ?? `CPUs ${binding.cpus.join(',')}, planned ${plannedCpus().join(',')}`;
}
