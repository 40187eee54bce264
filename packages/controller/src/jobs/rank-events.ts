// What agents report about ranks: starts, output, exits, and — after every
// reconnect — the ranks they hold. This is the wire's side: it finds the rank a message
// is about (refusing a node that speaks for another's rank), stores output, and asks
// agents to resume; every change of a job or rank is a transition of the lifecycle.
import type { RankExit, RankOutput, RankStarted, RanksReport } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { AgentRefusals } from '../gateway/agent-refusal.js';
import type { AgentSender } from '../gateway/agent-sender.js';
import type { RankRecord } from './job-records.js';
import type { JobManager } from './job-manager.js';
import type { LiveJobView, PendingExit } from './live-job.js';
import { isTerminal } from './rank-status.js';

export class RankEvents {
  private readonly dirtyBytes = new Set<Readonly<RankRecord>>();
  private readonly flushTimer: NodeJS.Timeout;

  constructor(
    private readonly jobs: JobManager,
    private readonly agents: AgentSender,
    private readonly repo: { updateBytes(r: Readonly<RankRecord>): void },
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
    const start = { pid: m.pid, startedAt: Date.parse(m.startedAt) || null, binding: m.binding, warnings: m.warnings };
    this.jobs.lifecycle.rankStarted(m.jobId, m.rank, node, start);
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
      this.jobs.events.append('rank.output', `${m.jobId}/${m.rank}`, {
        stream: m.stream,
        offset: size - result.bytes,
        bytes: result.bytes,
      });
      // a rank that ended with these bytes has had them written with its end
      if (this.jobs.lifecycle.outputStored(m.jobId, m.rank, m.stream, size)) this.dirtyBytes.delete(r);
      else this.dirtyBytes.add(r);
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
    const exit: PendingExit = {
      code: m.code,
      signal: m.signal,
      endedAt: Date.parse(m.endedAt) || Date.now(),
      outputBytes: m.outputBytes,
      ...(m.error ? { error: m.error } : {}),
    };
    if (this.jobs.lifecycle.exitReported(m.jobId, m.rank, exit)) this.dirtyBytes.delete(r);
    else this.resume(node, live, r);
  }

  /** After a (re)connect: resume every rank the agent holds, stop what should not run, start what never started. */
  report(node: string, m: RanksReport): void {
    const reported = new Set<string>();
    for (const held of m.ranks) {
      reported.add(`${held.jobId}/${held.rank}`);
      const live = this.jobs.lifecycle.attempt(held.jobId);
      if (!live) {
        // An orphan: its job ended (or never existed here). End it; drop its spool.
        // Recorded, because it tells what a node did while it was cut off.
        this.jobs.events.append('rank.reported', `${held.jobId}/${held.rank}`, {
          node,
          state: held.state,
          pid: held.pid,
          outputBytes: held.outputBytes,
          job: 'not live',
        });
        if (held.state === 'running')
          this.agents.send(node, {
            type: 'job.abort',
            jobId: held.jobId,
            graceMs: 0,
            reason: 'job is not live on the controller',
          });
        this.agents.send(node, { type: 'job.release', jobId: held.jobId });
        continue;
      }
      const r = live.ranks[held.rank];
      if (!r || r.node !== node) continue;
      if (live.stopping && held.state === 'running') {
        this.agents.send(node, { type: 'job.abort', jobId: live.attemptId, graceMs: 0, reason: live.stopping.reason });
      }
      this.resume(node, live, r);
    }
    this.jobs.lifecycle.nodeReported(node, reported);
  }

  flush(): void {
    for (const r of this.dirtyBytes) this.repo.updateBytes(r);
    this.dirtyBytes.clear();
  }

  private resume(node: string, live: LiveJobView, r: Readonly<RankRecord>): void {
    this.agents.send(node, {
      type: 'job.resume',
      jobId: live.attemptId,
      rank: r.rank,
      offsets: {
        stdout: this.jobs.logs.size(live.attemptId, r.rank, 'stdout'),
        stderr: this.jobs.logs.size(live.attemptId, r.rank, 'stderr'),
      },
    });
  }

  /** The live rank, null when its job is not live, FOREIGN when another node owns it (the sender is told). */
  private rankOf(
    node: string,
    jobId: string,
    rank: number,
    type: string,
  ): { live: LiveJobView; r: Readonly<RankRecord> } | typeof FOREIGN | null {
    const live = this.jobs.lifecycle.attempt(jobId);
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
