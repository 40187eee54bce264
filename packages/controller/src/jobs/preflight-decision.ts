// What a job's preflight (rankd run --preflight) makes of its check: start the ranks, plan
// the job again without the flagged nodes, or end it with the finding. Pure: the job manager
// runs the check and applies the answer, the tests judge real check results.
//
// A node can be left out only where the placement allows it: a job that names its nodes
// (--nodelist) cannot lose one, and a job that needs more nodes than the ready cluster has
// without the flagged ones (every ready node, say) would wait for them forever.
import { CheckErrorCode, type NetCheckResult } from '@rankd/protocol';
import { formatBitRate } from '@rankd/protocol/bit-rate';
import { plural } from '@rankd/protocol/plural';

export type PreflightDecision =
  /** No node of the plan was flagged: its ranks start. */
  | { action: 'pass'; note: string }
  /** These nodes are left out (as a failed attempt's are) and the job goes back to the queue. */
  | { action: 'leave-out'; nodes: string[]; note: string }
  /** The job ends without a rank: `note` is its reason, with RANKD_PREFLIGHT_FAILED. */
  | { action: 'fail'; note: string };

export interface PreflightJob {
  /** The plan's nodes, which the check measured. */
  planned: readonly string[];
  /** The job names its nodes (--nodelist). */
  nodelist: boolean;
  /** Why the job could not be placed on the ready cluster without these nodes; null when it could. */
  placeWithout(nodes: readonly string[]): string | null;
}

export function decidePreflight(result: NetCheckResult, job: PreflightJob): PreflightDecision {
  const check = `check ${result.id}`;
  const planned = new Set(job.planned);
  const flagged = result.nodes.filter((v) => v.verdict !== 'ok' && planned.has(v.node));
  if (flagged.length === 0 && pairsMeasured(result) < 2)
    return {
      action: 'pass',
      note:
        `preflight: ${job.planned.join(', ')} not judged: a single pair is its own median, and no other ready ` +
        `node could referee (${check}); starting`,
    };
  if (flagged.length === 0) {
    const medians = result.rails.flatMap((r) =>
      r.medianBps === null ? [] : [`${r.name} median ${formatBitRate(r.medianBps)}`],
    );
    const measured = [plural(result.links.length, 'direction') + ' measured', ...medians].join(', ');
    return { action: 'pass', note: `preflight: ${job.planned.join(', ')} passed (${check}: ${measured})` };
  }
  const names = flagged.map((v) => v.node);
  const found = flagged.map((v) => `${v.node} ${v.verdict}: ${v.reason ?? v.verdict}`).join('; ');
  const them = names.length === 1 ? 'it' : 'them';
  if (job.nodelist) return fail(`${found}; the job names its nodes (--nodelist), so none can be left out (${check})`);
  const why = job.placeWithout(names);
  if (why !== null) return fail(`${found}; the job cannot be placed without ${them}: ${why} (${check})`);
  const left = flagged.map((v) => `${v.node} left out: ${v.reason ?? v.verdict}`).join('; ');
  return {
    action: 'leave-out',
    nodes: names,
    note: `preflight: ${left}; planning again without ${them} (${check})`,
  };
}

/** Distinct pairs with a measurement: below two, no link can fall below the median. */
function pairsMeasured(result: NetCheckResult): number {
  const pairs = new Set<string>();
  for (const l of result.links) if (l.error === null) pairs.add([l.src, l.dst].sort().join('\0'));
  return pairs.size;
}

/** The job could not be measured at all: it ends, as no silent pass would be honest. */
export function unmeasured(why: string): PreflightDecision {
  return fail(`could not measure the job's nodes: ${why}`);
}

/** A one-node plan has no pair to measure: the preflight says so and the ranks start. */
export function oneNodeNote(node: string): string {
  return `preflight: one node (${node}): a net check measures pairs, so there is nothing to measure; starting`;
}

function fail(finding: string): PreflightDecision {
  return { action: 'fail', note: `preflight: ${finding} (${CheckErrorCode.PreflightFailed})` };
}
