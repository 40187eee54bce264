// What agents report about ranks: starts, output, exits, and — after every
// reconnect — the ranks they hold, which the controller reconciles with its records.
import type { RankExit, RankOutput, RankStarted, RanksReport, StreamName } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { AgentRefusals } from '../gateway/agent-refusal.js';
import type { RankRecord } from '../store/jobs-repo.js';
import type { AgentSender, JobManager } from './job-manager.js';
import { allStarted, type LiveJob, type PendingExit } from './live-job.js';
import { isTerminal } from './rank-status.js';
import { plannedCpus } from './job-view.js';

export class RankEvents {
  private readonly dirtyBytes = new Set<RankRecord>();
  private readonly flushTimer: NodeJS.Timeout;

  constructor(
    private readonly jobs: JobManager,
    private readonly agents: AgentSender,
    private readonly repo: { updateBytes(r: RankRecord): void; updateRank(r: RankRecord): void },
    private readonly refusals: AgentRefusals,
    private readonly log: Logger,
  ) {
    // The byte counts in the database are an index; the files are the truth. Batch them.
    this.flushTimer = setInterval(() => this.flush(), 1000);
    this.flushTimer.unref();
  }

  close(): void {
    clearInterval(this.flushTimer);
    this.flush();
  }

  started(node: string, m: RankStarted): void {
    const found = this.rankOf(node, m.jobId, m.rank, m.type);
    if (!found || found === FOREIGN) return;
    const { live, r } = found;
    if (r.state !== 'pending') return; // a repeated report after a reconnect
    r.state = 'running';
    r.pid = m.pid;
    r.startedAt = Date.parse(m.startedAt) || Date.now();
    r.binding = m.binding;
    r.warnings = m.warnings;
    this.repo.updateRank(r);
    this.jobs.events.append('rank.started', `${m.jobId}/${m.rank}`, { node, pid: m.pid });
    const mismatch = bindingMismatch(() => plannedCpus(live.job.rankMap!.ranks[r.rank]), m);
    if (mismatch) {
      this.jobs.stop(live, 'failed', `rank ${r.rank} on ${node}: binding mismatch: ${mismatch}`);
    }
    if (live.job.state === 'starting' && allStarted(live)) {
      this.jobs.setJob(live, { state: 'running', reason: 'all ranks started' });
    }
    this.jobs.emit('changed', live.job.id);
  }

  output(node: string, m: RankOutput, data: Buffer): void {
    const found = this.rankOf(node, m.jobId, m.rank, m.type);
    if (!found || found === FOREIGN) return;
    const { live, r } = found;
    const result = this.jobs.logs.append(m.jobId, m.rank, m.stream, m.offset, data);
    if (result.kind === 'gap') {
      // Something between was lost (it cannot be on one ordered link, but a restart can):
      // ask for everything from what is stored.
      this.resume(node, live, r);
      return;
    }
    if (result.kind === 'stored') {
      const size = this.jobs.logs.size(m.jobId, m.rank, m.stream);
      // what was stored, not what was sent: a resent chunk may overlap what is there
      this.jobs.events.append('rank.output', `${m.jobId}/${m.rank}`, { stream: m.stream, offset: size - result.bytes, bytes: result.bytes });
      setBytes(r, m.stream, size);
      this.dirtyBytes.add(r);
      const pending = live.pendingExits.get(r.rank);
      if (pending && hasAll(r, pending)) this.applyExit(live, r, pending);
    }
  }

  exit(node: string, m: RankExit): void {
    const found = this.rankOf(node, m.jobId, m.rank, m.type);
    if (found === FOREIGN) return;
    if (!found) {
      this.agents.send(node, { type: 'job.release', jobId: m.jobId });
      return;
    }
    const { live, r } = found;
    if (isTerminal(r)) return;
    const exit: PendingExit = { code: m.code, signal: m.signal, endedAt: Date.parse(m.endedAt) || Date.now(), outputBytes: m.outputBytes, ...(m.error ? { error: m.error } : {}) };
    if (hasAll(r, exit)) this.applyExit(live, r, exit);
    else {
      live.pendingExits.set(r.rank, exit);
      this.resume(node, live, r);
    }
  }

  /** After a (re)connect: resume every rank the agent holds, stop what should not run, start what never started. */
  report(node: string, m: RanksReport): void {
    const reported = new Set<string>();
    for (const held of m.ranks) {
      reported.add(`${held.jobId}/${held.rank}`);
      const live = this.jobs.live.get(held.jobId);
      if (!live) {
        // An orphan: its job ended (or never existed here). End it; drop its spool.
        // Recorded, because it tells what a node did while it was cut off.
        this.jobs.events.append('rank.reported', `${held.jobId}/${held.rank}`, { node, state: held.state, pid: held.pid, outputBytes: held.outputBytes, job: 'not live' });
        if (held.state === 'running') this.agents.send(node, { type: 'job.abort', jobId: held.jobId, graceMs: 0, reason: 'job is not live on the controller' });
        this.agents.send(node, { type: 'job.release', jobId: held.jobId });
        continue;
      }
      const r = live.ranks[held.rank];
      if (!r || r.node !== node) continue;
      if (live.stopping && held.state === 'running') {
        this.agents.send(node, { type: 'job.abort', jobId: held.jobId, graceMs: 0, reason: live.stopping.reason });
      }
      this.resume(node, live, r);
    }
    for (const live of this.jobs.live.values()) {
      for (const r of live.ranks) {
        if (r.node !== node || reported.has(`${r.jobId}/${r.rank}`) || isTerminal(r)) continue;
        if (r.state === 'pending') continue; // dispatched below
        this.jobs.endRank(live, r, 'unknown', `agent on ${node} no longer knows rank ${r.rank}`);
      }
      if (this.jobs.live.has(live.job.id) && !live.stopping && live.ranks.some((r) => r.node === node && r.state === 'pending' && !reported.has(`${r.jobId}/${r.rank}`))) {
        this.jobs.dispatch(live, node);
      }
    }
  }

  flush(): void {
    for (const r of this.dirtyBytes) this.repo.updateBytes(r);
    this.dirtyBytes.clear();
  }

  private applyExit(live: LiveJob, r: RankRecord, exit: PendingExit): void {
    live.pendingExits.delete(r.rank);
    this.dirtyBytes.delete(r);
    if (exit.error) this.jobs.endRank(live, r, r.state === 'pending' ? 'failed-to-start' : 'unknown', `${exit.error.message} (${exit.error.code})`, exit);
    else if (exit.code === null && exit.signal === null) this.jobs.endRank(live, r, 'unknown', 'no exit status recorded', exit);
    else this.jobs.endRank(live, r, 'exited', null, exit);
  }

  private resume(node: string, live: LiveJob, r: RankRecord): void {
    this.agents.send(node, {
      type: 'job.resume',
      jobId: live.job.id,
      rank: r.rank,
      offsets: { stdout: this.jobs.logs.size(live.job.id, r.rank, 'stdout'), stderr: this.jobs.logs.size(live.job.id, r.rank, 'stderr') },
    });
  }

  /** The live rank, null when its job is not live, FOREIGN when another node owns it (the sender is told). */
  private rankOf(node: string, jobId: string, rank: number, type: string): { live: LiveJob; r: RankRecord } | typeof FOREIGN | null {
    const live = this.jobs.live.get(jobId);
    const r = live?.ranks[rank];
    if (!live || !r) return null;
    if (r.node !== node) {
      this.refusals.foreignRank(node, type, jobId, rank);
      return FOREIGN;
    }
    return { live, r };
  }
}

const FOREIGN = Symbol('foreign rank');

function setBytes(r: RankRecord, stream: StreamName, size: number): void {
  if (stream === 'stdout') r.stdoutBytes = size;
  else r.stderrBytes = size;
}

function hasAll(r: RankRecord, exit: PendingExit): boolean {
  return r.stdoutBytes >= exit.outputBytes.stdout && r.stderrBytes >= exit.outputBytes.stderr;
}

/**
 * Why the binding differs from the plan, or null. The agent compares what it applied
 * with /proc/<pid>/status; a rank that exited before it could be read has no CPUs
 * to show and is not a mismatch.
 */
function bindingMismatch(plannedCpus: () => number[], m: RankStarted): string | null {
  if (m.binding.verified || m.binding.cpus.length === 0) return null;
  return m.binding.detail ?? `CPUs ${m.binding.cpus.join(',')}, planned ${plannedCpus().join(',')}`;
}
