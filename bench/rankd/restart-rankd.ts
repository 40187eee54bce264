// rankd's side of the `restart` figure: `rankd run --max-restarts N` against a fleet on
// loopback. The restart loop (issue 27) lands in the controller; until `rankd run` offers
// --max-restarts, the figure says so instead of timing a run that cannot restart.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { BenchContext } from '../lib/figure.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';

const run = promisify(execFile);

/** null when `rankd run --max-restarts` exists in the built CLI, else the reason to report. */
export async function whyNoRestarts(ctx: BenchContext): Promise<string | null> {
  const missing = await missingCommand(ctx.repoRoot, 'run');
  if (missing) return missing;
  try {
    const { stdout } = await run(process.execPath, rankdArgv(ctx.repoRoot, ['run', '--help']).slice(1), {
      timeout: 15_000,
    });
    if (!/--max-restarts\b/.test(stdout))
      return '`rankd run --max-restarts` does not exist yet (the restart loop of issue 27 is not in this build)';
    return null;
  } catch (err) {
    return `\`rankd run --help\` failed: ${(err as Error).message.split('\n')[0]}`;
  }
}

/** `rankd run -q -n N --max-restarts R -- worker…`: what a user types, without the rank map. */
export function rankdRestartArgv(
  ctx: BenchContext,
  opts: { ntasks: number; maxRestarts: number; worker: readonly string[] },
): string[] {
  return rankdArgv(ctx.repoRoot, [
    'run',
    '-q',
    '-n',
    String(opts.ntasks),
    '--max-restarts',
    String(opts.maxRestarts),
    '--',
    ...opts.worker,
  ]);
}
