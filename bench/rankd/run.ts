// The rankd half of `launch`, `mpi-launch`, `fanout` and `logs`: `rankd run` against a fleet started by
// this bench on loopback, timed from spawn to exit like the peers' launchers.
import type { BenchContext } from '../lib/figure.js';
import { MIN_ROUNDS } from '../lib/interleave.js';
import { medianProcessMs } from '../lib/process-timing.js';
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

/** Where the ranks go: nodes × ranks per node, or a total count the planner spreads (`-n`). */
export type RunPlacement = { nodes: number; ranksPerNode: number; oversubscribe?: boolean } | { ntasks: number };

/**
 * `rankd run -q -N nodes --ranks-per-node n [--no-label] -- command…`, or `-n ntasks`.
 * quiet (the default here) drops the rank-map header; `quiet: false` is what a user gets
 * who types `rankd run` with no flag.
 */
export function rankdRunArgv(
  ctx: BenchContext,
  placement: RunPlacement,
  command: readonly string[],
  opts: { label?: boolean; quiet?: boolean } = {},
): string[] {
  return rankdArgv(ctx.repoRoot, [
    'run',
    ...(opts.quiet === false ? [] : ['-q']),
    ...(opts.label === false ? ['--no-label'] : []),
    ...('ntasks' in placement
      ? ['-n', String(placement.ntasks)]
      : [
          '-N',
          String(placement.nodes),
          '--ranks-per-node',
          String(placement.ranksPerNode),
          ...(placement.oversubscribe ? ['--oversubscribe'] : []),
        ]),
    '--',
    ...command,
  ]);
}

/** rankd's floor on this machine: what a Node process and the CLI cost before any request (medians). */
export async function cliFloor(ctx: BenchContext): Promise<{ nodeMs: number; cliMs: number }> {
  const rounds = Math.max(MIN_ROUNDS, ctx.rounds);
  const nodeMs = await medianProcessMs([process.execPath, '-e', '0'], rounds);
  const cliMs = await medianProcessMs(rankdArgv(ctx.repoRoot, ['version']), rounds);
  return { nodeMs, cliMs };
}

/** `rankd run --help`, median: the CLI with the modules of `rankd run` loaded, before any request. */
export async function runCommandFloor(ctx: BenchContext): Promise<number> {
  return medianProcessMs(rankdArgv(ctx.repoRoot, ['run', '--help']), Math.max(MIN_ROUNDS, ctx.rounds));
}
