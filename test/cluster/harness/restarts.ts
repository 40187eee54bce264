// What the gang-restart tests share: a workload that behaves per attempt, a job's view as
// `rankd job ID --json` prints it (attempts included), an attempt's stored log, and the
// rank processes a test kills.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster, JobView } from './cluster.js';
import { attemptIdOf } from './history.js';

export interface AttemptView {
  attempt: number;
  state: string;
  reason: string;
  nodes: string[];
  startedAt: string;
  endedAt: string | null;
  exitCode: number | null;
  firstFailure: {
    rank: number;
    node: string;
    state: string;
    exitCode: number | null;
    signal: string | null;
    reason: string;
    lastLines: string[];
  } | null;
  excluded: string[];
  restartDelay: number | null;
}

export interface RestartingJobView extends JobView {
  attempt: number;
  maxRestarts: number;
  attempts: AttemptView[];
  excluded: string[];
}

/** The line each rank of restartingWorkload() prints first: what its environment says of the attempt. */
export function attemptLine(o: { attempt: number; rank: number; size: number; job: string; max: number }): string {
  return (
    `attempt=${o.attempt} rank=${o.rank} size=${o.size} job=${o.job} max=${o.max} ` +
    `torch=${o.attempt}/${o.max}/${o.job}`
  );
}

/** The shell command that prints a rank's attemptLine() from its environment. */
export const PRINT_ATTEMPT =
  'echo "attempt=$RANKD_ATTEMPT rank=$RANK size=$WORLD_SIZE job=$RANKD_JOB_ID max=$RANKD_MAX_RESTARTS ' +
  'torch=$TORCHELASTIC_RESTART_COUNT/$TORCHELASTIC_MAX_RESTARTS/$TORCHELASTIC_RUN_ID"';

/**
 * sh -c argv: every rank prints its attemptLine(), then runs `byAttempt[RANKD_ATTEMPT]`
 * (a shell command, `exec`ed so the rank's pid is its own) or exits 0 when there is none.
 */
export function restartingWorkload(byAttempt: Record<number, string>): string[] {
  const cases = Object.entries(byAttempt)
    .map(([k, cmd]) => `${Number(k)}) exec ${cmd};; `)
    .join('');
  return ['sh', '-c', `${PRINT_ATTEMPT}; case "$RANKD_ATTEMPT" in ${cases}esac; exit 0`];
}

/** `rankd job ID --json`, run in the controller's namespace as a user would. */
export async function jobJson(c: Cluster, id: string): Promise<RestartingJobView> {
  const out = await c.rankd(['job', id, '--json'], 60_000);
  if (out.code !== 0) throw new Error(`rankd job ${id} --json exited ${out.code}: ${out.stderr}`);
  return JSON.parse(out.stdout) as RestartingJobView;
}

/** A rank's stream of one attempt, as the controller stored it (<data>/logs/<attemptId>/). */
export function attemptLog(c: Cluster, jobId: string, attempt: number, rank: number, stream = 'stdout'): string {
  return readFileSync(join(c.dataDir, 'logs', attemptIdOf(jobId, attempt), `${rank}.${stream}`), 'utf8');
}
