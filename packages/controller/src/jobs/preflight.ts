// A --preflight job's check, as the job manager sees it: a narrow seam (the controller wires
// it to the fleet's CheckService), and the bound on how long a planned job's cores wait for it.
import { CheckErrorCode, type NetCheckResult } from '@rankd/protocol';
import { naturalCompare } from '@rankd/protocol/natural-order';
import type { Clock } from './clock.js';

/** Seconds of traffic per probe: a preflight is a quick look, not `rankd check net`. */
export const PREFLIGHT_DURATION_S = 1;

/**
 * A check that has not answered by then fails the job, and what it held is freed. Each round
 * of 1 s probes ends within its probes' own deadline (serve wait, duration and margins: about
 * 11 s over TCP, twice that over RDMA, where latency follows bandwidth); a preflight runs two.
 */
export const PREFLIGHT_DEADLINE_MS = 60_000;

/**
 * The exit status of a job its preflight ended: `rankd run`'s "refused" (sysexits' EX_DATAERR),
 * as for a job the controller refuses at submission. No rank ran, so no program's status applies.
 */
export const PREFLIGHT_FAILED_STATUS = 65;

/**
 * The fewest nodes a preflight's check measures. Slow links are judged against their rail's
 * median, and one round of two nodes is a single link: its own median, never below it. With
 * four, the round has two links and the recheck two more, so that one slow node's links are
 * not the median. A smaller job's check takes other ready nodes as referees (idle ones first):
 * they are measured, never judged for the job.
 */
export const PREFLIGHT_MIN_NODES = 4;

/** How often a preflight whose nodes another check is measuring tries again, until its deadline. */
export const PREFLIGHT_BUSY_RETRY_MS = 1000;

export interface PreflightChecks {
  /**
   * Measures these nodes (1 s probes: one round of the net check's schedule, then each
   * suspect against a healthy node) and stores the check, readable with GET /v1/checks.
   */
  run(nodes: readonly string[], threshold: number): Promise<NetCheckResult>;
}

export type PreflightOutcome = { result: NetCheckResult } | { error: string };

/** Ready nodes outside the plan that fill the check up to PREFLIGHT_MIN_NODES: idle ones first, then in name order. */
export function refereesFor(
  planned: readonly string[],
  ready: readonly string[],
  idle: (node: string) => boolean,
): string[] {
  const need = PREFLIGHT_MIN_NODES - planned.length;
  if (need <= 0) return [];
  const inPlan = new Set(planned);
  const others = ready.filter((n) => !inPlan.has(n)).sort(naturalCompare);
  return [...others.filter(idle), ...others.filter((n) => !idle(n))].slice(0, need);
}

/**
 * The check's result, or why there is none: it failed, or did not answer within `deadlineMs`.
 * Nodes another check is measuring (RANKD_CHECK_BUSY: a `rankd check net`, another job's
 * preflight) are waited for, within the same deadline.
 */
export function measureNodes(
  checks: PreflightChecks,
  nodes: readonly string[],
  threshold: number,
  clock: Clock,
  deadlineMs = PREFLIGHT_DEADLINE_MS,
): Promise<PreflightOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: PreflightOutcome) => {
      if (settled) return;
      settled = true;
      stopTimer();
      resolve(outcome);
    };
    let busy: string | null = null;
    let stopRetry = () => {};
    const stopTimer = clock.after(deadlineMs, () => {
      stopRetry();
      const seconds = deadlineMs / 1000;
      settle({
        error: busy ? `still busy after ${seconds} s: ${busy}` : `the check did not answer within ${seconds} s`,
      });
    });
    const run = () =>
      checks.run(nodes, threshold).then(
        (result) => settle({ result }),
        (err: Error & { code?: string }) => {
          const why = err.code ? `${err.message} (${err.code})` : err.message;
          if (err.code !== CheckErrorCode.Busy) return settle({ error: why });
          busy = why;
          if (!settled) stopRetry = clock.after(PREFLIGHT_BUSY_RETRY_MS, run);
        },
      );
    void run();
  });
}
