// The queue's REST view: what each job asked for and what it holds, without its
// command line or environment, so that every user may see the whole queue (as squeue).
import type { QueueEntry, QueueList } from '@rankd/protocol';
import type { JobRecord } from './job-records.js';
import type { JobManager } from './job-manager.js';
import { maxRestarts } from './restart-policy.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function queueList(jobs: JobManager): QueueList {
  const running = [...jobs.live.values()].map((l) => l.job).sort((a, b) => a.createdAt - b.createdAt);
  return {
    jobs: [...running.map((j) => entry(j, null)), ...jobs.queue().map(({ job, position }) => entry(job, position))],
    lastPassMs: jobs.scheduler.lastPassMs,
  };
}

function entry(job: JobRecord, position: number | null): QueueEntry {
  const d = job.demand;
  const mode = job.submit.placement?.exclusive ? 'exclusive' : job.submit.placement?.share ? 'share' : 'normal';
  const held = job.allocation && {
    nodes: Object.keys(job.allocation.nodes),
    cpus: Object.values(job.allocation.nodes).reduce((n, a) => n + a.cpus.length, 0),
    gpus: Object.values(job.allocation.nodes).reduce((n, a) => n + a.gpus.length, 0),
  };
  return {
    id: job.id,
    name: job.name,
    owner: job.owner,
    state: job.state,
    reason: job.reason,
    position,
    priority: job.priority,
    asked: d && {
      ranks: d.ranks,
      nodes: d.nodes,
      coresPerNode: d.coresPerNode,
      gpusPerNode: d.gpusPerNode,
      cores: d.cores,
      gpus: d.gpus,
      mode,
    },
    held,
    timeLimit: job.submit.timeout ?? null,
    createdAt: new Date(job.createdAt).toISOString(),
    startedAt: iso(job.startedAt),
    attempt: job.attempt,
    maxRestarts: maxRestarts(job),
  };
}
