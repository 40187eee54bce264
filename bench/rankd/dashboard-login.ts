// A one-time dashboard login URL, got the way a user gets one: `rankd dashboard` against the
// bench's controller (RANKD_URL, RANKD_TOKEN and RANKD_CA from the fleet). Each URL signs
// one browser in once, so every measured load asks for a fresh one, outside the timing.
import type { BenchContext } from '../lib/figure.js';
import { timeProcess } from '../lib/process-timing.js';
import { rankdArgv } from '../lib/rankd.js';
import type { Fleet } from './fleet.js';

const CLI_TIMEOUT_MS = 30_000;

export async function dashboardLoginUrl(ctx: BenchContext, fleet: Fleet): Promise<string> {
  const run = await timeProcess(rankdArgv(ctx.repoRoot, ['dashboard']), {
    timeoutMs: CLI_TIMEOUT_MS,
    env: fleet.clientEnv,
    captureStdout: true,
  });
  const url = run.stdout.trim();
  if (!/^https:\/\/[^/]+\/ui\/#login=[A-Za-z0-9_-]+$/.test(url))
    throw new Error(`rankd dashboard printed ${JSON.stringify(url.slice(0, 200))}, not a login URL`);
  return url;
}
