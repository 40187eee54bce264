// The rankd half of `launch`, `fanout` and `logs`: `rankd run` against a fleet started by
// this bench on loopback, timed from spawn to exit like the peers' launchers.
import type { BenchContext } from '../lib/figure.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';
import { startFleet, whyNoFleet, type Fleet } from './fleet.js';

export type FleetOrWhy = { fleet: Fleet } | { why: string };

/** A fleet of `agents` agents when `rankd run` and the daemons exist; otherwise why not. */
export async function fleetForRun(ctx: BenchContext, agents: number, prefix: string): Promise<FleetOrWhy> {
  const missing = (await missingCommand(ctx.repoRoot, 'run')) ?? (await whyNoFleet(ctx));
  if (missing) return { why: missing };
  try {
    return { fleet: await startFleet(ctx, { agents, prefix }) };
  } catch (err) {
    return { why: `the rankd fleet did not start: ${(err as Error).message}` };
  }
}

/** `rankd run -q -N nodes --ranks-per-node n [--no-label] -- command…` */
export function rankdRunArgv(ctx: BenchContext, placement: { nodes: number; ranksPerNode: number; oversubscribe?: boolean }, command: readonly string[], opts: { label?: boolean } = {}): string[] {
  return rankdArgv(ctx.repoRoot, [
    'run', '-q',
    ...(opts.label === false ? ['--no-label'] : []),
    '-N', String(placement.nodes),
    '--ranks-per-node', String(placement.ranksPerNode),
    ...(placement.oversubscribe ? ['--oversubscribe'] : []),
    '--', ...command,
  ]);
}
