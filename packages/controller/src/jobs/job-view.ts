// The REST view of a job, assembled from its records.
import type { JobSummary, JobView, RankView } from '@rankd/protocol';
import { DEFAULT_JOB_GRACE_SECONDS } from '@rankd/protocol/limits';
import type { JobRecord, RankRecord } from './job-records.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function jobView(job: JobRecord, ranks: readonly RankRecord[]): JobView {
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
