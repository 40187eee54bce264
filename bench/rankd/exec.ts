// The rankd half of `exec`: `rankd exec all -- true` over 32 agents started on this host
// (bench-host-01 … bench-host-32, the names of Ansible's aliases), timed from spawn to the
// end of its output, as ansible is. The agents hold their links open, as they would on a
// cluster; each sample is a fresh CLI process, so its start-up is counted.
import type { BenchContext } from '../lib/figure.js';
import { timeProcess } from '../lib/process-timing.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';
import type { Candidate } from '../lib/rows.js';
import { startFleet } from './fleet.js';

const AGENTS = 32;
const TIMEOUT_MS = 120_000;

/** The rankd arm; its fleet is registered for teardown and ends with the figure. */
export async function rankdExecArm(ctx: BenchContext, name: string): Promise<Candidate> {
  for (const command of ['exec', 'controller', 'agent']) {
    const missing = await missingCommand(ctx.repoRoot, command);
    if (missing) return { name, unavailable: missing };
  }
  let fleet;
  try {
    fleet = await startFleet(ctx, { agents: AGENTS, prefix: 'bench-host' });
  } catch (err) {
    return { name, unavailable: `the rankd fleet did not start: ${(err as Error).message}` };
  }
  const argv = rankdArgv(ctx.repoRoot, ['exec', 'all', '--', 'true']);
  const env = fleet.clientEnv;
  return {
    name,
    sample: async () => {
      const r = await timeProcess(argv, { timeoutMs: TIMEOUT_MS, env, captureStdout: true });
      // Every agent must report rc=0, or the run measured a failure.
      const ok = (r.stdout.match(/\| SUCCESS \| rc=0/g) ?? []).length;
      if (ok !== AGENTS) throw new Error(`rankd exec reported rc=0 on ${ok} of ${AGENTS} hosts`);
      return r.ms;
    },
  };
}
