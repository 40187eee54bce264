// Why an attempt failed, as the `reason` label of rankd_job_restarts_total: a few fixed
// values (never the reason's text, which would make one series per failure).
import type { AttemptView } from '@rankd/protocol';

export type RestartCause = 'node-lost' | 'signal' | 'exit-code' | 'failed';

/**
 * node-lost: a node of the attempt was lost (its ranks' status unknown); signal: its first
 * failing rank was killed by a signal; exit-code: that rank exited non-zero; failed: any
 * other failure (a rank that failed to start).
 */
export function restartCause(attempt: Pick<AttemptView, 'state' | 'firstFailure'> | undefined): RestartCause {
  if (attempt?.state === 'lost') return 'node-lost';
  const first = attempt?.firstFailure;
  if (first?.signal) return 'signal';
  if (first?.exitCode !== null && first?.exitCode !== undefined && first.exitCode !== 0) return 'exit-code';
  return 'failed';
}
