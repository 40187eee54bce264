// PENDING — the rankd half of `exec`: `rankd exec --group bench -- true` over 32 agents
// started on this host (each `rankd agent --controller URL --token-file F --name
// bench-host-NN`), timed from spawn to exit, as ansible is over 32 inventory aliases.
// Until `rankd exec` exists and this half is written against it, the figure says so.
import type { BenchContext } from '../lib/figure.js';
import { missingCommand } from '../lib/rankd.js';
import type { Candidate } from '../lib/rows.js';

export const RANKD_EXEC_PENDING = true;

export async function rankdExecArm(ctx: BenchContext, name: string): Promise<Candidate> {
  for (const command of ['exec', 'controller', 'agent']) {
    const missing = await missingCommand(ctx.repoRoot, command);
    if (missing) return { name, unavailable: missing };
  }
  return { name, unavailable: 'pending: `rankd exec` exists but its bench half (bench/pending/rankd-exec.ts) is not written yet' };
}
