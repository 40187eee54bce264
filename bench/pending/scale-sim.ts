// PENDING — the rankd half of `scale`: one `rankd controller` on 127.0.0.1 and 2,000
// simulated agents speaking the real session protocol (@rankd/protocol messages over
// WebSocket, the join token, hello, facts, heartbeats) from 4 Node processes × 500
// connections; then RSS and CPU of the controller pid over 70 s in 10-s windows
// (lib/proc-sampling.ts), as agent-rest does for one agent.
// What is missing is the simulator: a client of the session protocol that opens many
// connections from one process. Until it exists the figure says so.
import type { BenchContext } from '../lib/figure.js';
import { missingCommand } from '../lib/rankd.js';

export const SCALE_SIM_PENDING = true;

export async function whyScalePending(ctx: BenchContext): Promise<string> {
  const missing = await missingCommand(ctx.repoRoot, 'controller');
  if (missing) return missing;
  return 'pending: the controller exists, but the simulator of 2,000 agents (bench/pending/scale-sim.ts) is not written yet';
}
