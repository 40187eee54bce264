// The REST view of a job, assembled from its records.
import type { AttemptView, JobSummary, JobView, RankView } from '@rankd/protocol';
import { DEFAULT_JOB_GRACE_SECONDS, NET_CHECK_THRESHOLD } from '@rankd/protocol/limits';
import type { AttemptRecord } from './attempts-repo.js';
import type { JobRecord, RankRecord } from './job-records.js';
import { maxRestarts, restartOn } from './restart-policy.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The job with the ranks of its current (or last) attempt, and every attempt that started. */
export function jobView(job: JobRecord, ranks: readonly RankRecord[], attempts: readonly AttemptRecord[]): JobView {
  return {
    id: job.id,
    name: job.name,
    state: job.state,
    reason: job.reason,
    command: job.submit.command,
    cwd: job.submit.cwd ?? null,
    user: job.submit.user ?? null,
    owner: job.owner,
    failPolicy: job.submit.failPolicy ?? 'fail-fast',
    timeout: job.submit.timeout ?? null,
    grace: graceSeconds(job),
    pty: job.submit.pty ?? false,
    mpi: job.submit.mpi ?? 'pmi1',
    exitCode: job.exitCode,
    createdAt: new Date(job.createdAt).toISOString(),
    startedAt: iso(job.startedAt),
    endedAt: iso(job.endedAt),
    priority: job.priority,
    rankMap: job.rankMap,
    ranks: ranks.map((r) => rankView(job, r)),
    attempt: job.attempt,
    maxRestarts: maxRestarts(job),
    restartOn: restartOn(job),
    restartDelay: job.submit.restartDelay ?? 0,
    attempts: attempts.map(attemptView),
    excluded: job.excluded,
    preflight: job.submit.preflight ?? false,
    preflightThreshold: job.submit.preflight ? (job.submit.preflightThreshold ?? NET_CHECK_THRESHOLD.default) : null,
  };
}

function attemptView(a: AttemptRecord): AttemptView {
  return {
    attempt: a.attempt,
    state: a.state,
    reason: a.reason,
    startedAt: new Date(a.startedAt).toISOString(),
    endedAt: iso(a.endedAt),
    nodes: a.nodes,
    exitCode: a.exitCode,
    firstFailure: a.firstFailure,
    excluded: a.excluded,
    restartDelay: a.restartDelayMs === null ? null : a.restartDelayMs / 1000,
  };
}

export function jobSummary(job: JobRecord): JobSummary {
  return {
    id: job.id,
    name: job.name,
    state: job.state,
    reason: job.reason,
    worldSize: job.rankMap?.worldSize ?? job.demand?.ranks ?? 0,
    nodes: job.rankMap?.nodes.map((n) => n.name) ?? [],
    command: job.submit.command,
    owner: job.owner,
    exitCode: job.exitCode,
    createdAt: new Date(job.createdAt).toISOString(),
    startedAt: iso(job.startedAt),
    endedAt: iso(job.endedAt),
    attempt: job.attempt,
    maxRestarts: maxRestarts(job),
  };
}

function rankView(job: JobRecord, r: RankRecord): RankView {
  const planned = job.rankMap?.ranks[r.rank];
  return {
    rank: r.rank,
    node: r.node,
    state: r.state,
    pid: r.pid,
    startedAt: iso(r.startedAt),
    endedAt: iso(r.endedAt),
    exitCode: r.exitCode,
    signal: r.signal,
    planned: { cpus: plannedCpus(planned), memNodes: planned?.memNodes ?? [] },
    actual: r.binding,
    outputBytes: { stdout: r.stdoutBytes, stderr: r.stderrBytes },
    error: r.error,
    warnings: r.warnings,
  };
}

/** A rank is bound to its compute CPUs and its communication-worker CPUs. */
export function plannedCpus(entry: { cpus: number[]; commCpus: number[] } | undefined): number[] {
  if (!entry) return [];
  return [...new Set([...entry.cpus, ...entry.commCpus])].sort((a, b) => a - b);
}

export function graceSeconds(job: JobRecord): number {
  return job.submit.grace ?? DEFAULT_JOB_GRACE_SECONDS;
}
