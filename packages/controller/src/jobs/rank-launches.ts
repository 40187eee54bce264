// What an agent is told to start: each pending rank of a live job as a RankLaunch, by node.
import type { RankLaunch, StdinTarget } from '@rankd/protocol';
import { plannedCpus } from './job-view.js';
import type { JobRecord } from './job-records.js';
import type { LiveJob } from './live-job.js';
import { maxRestarts } from './restart-policy.js';

/** The launches of the job's pending ranks (on `onlyNode` alone, when given), grouped by node in rank order. */
export function rankLaunches(live: LiveJob, onlyNode?: string): Map<string, RankLaunch[]> {
  const { job } = live;
  const byNode = new Map<string, RankLaunch[]>();
  for (const r of live.ranks) {
    if (r.state !== 'pending' || (onlyNode && r.node !== onlyNode)) continue;
    const entry = job.rankMap!.ranks[r.rank]!;
    const launch: RankLaunch = {
      rank: r.rank,
      argv: job.submit.command,
      // the submit's variables win over the planner's; the job's identity and attempt are always rankd's
      env: { ...entry.env, ...job.submit.env, ...attemptEnv(job) },
      cpus: plannedCpus(entry),
      memNodes: entry.memNodes,
      ...(job.submit.cwd ? { cwd: job.submit.cwd } : {}),
      ...(job.submit.user ? { user: job.submit.user } : {}),
      ...(job.submit.pty ? { pty: true } : {}),
      ...(readsStdin(job.submit.stdin, r.rank) ? { stdin: true } : {}),
    };
    let list = byNode.get(r.node);
    if (!list) byNode.set(r.node, (list = []));
    list.push(launch);
  }
  return byNode;
}

/**
 * Who the job is and which attempt this is, in rankd's names and in torchelastic's, so that
 * a training script written for `torchrun --max-restarts` resumes from its checkpoint
 * unchanged (TORCHELASTIC_RUN_ID names the job, as torchrun's --rdzv-id does).
 */
export function attemptEnv(job: Pick<JobRecord, 'id' | 'attempt' | 'submit'>): Record<string, string> {
  const max = String(maxRestarts(job));
  const attempt = String(job.attempt);
  return {
    RANKD_JOB_ID: job.id,
    RANKD_ATTEMPT: attempt,
    RANKD_MAX_RESTARTS: max,
    TORCHELASTIC_RUN_ID: job.id,
    TORCHELASTIC_RESTART_COUNT: attempt,
    TORCHELASTIC_MAX_RESTARTS: max,
  };
}

/** Whether `rank` reads the job's stdin (srun --input: one rank, or all). */
export function readsStdin(target: StdinTarget | undefined, rank: number): boolean {
  return target === 'all' || target === rank;
}
