// One gang restart of a launcher, timed. The launcher runs `ranks` workers of
// restart-worker.py with a budget of one restart; each worker tells the bench over a unix
// socket that it started (rank, attempt, pid). Once every worker of attempt 0 has, and
// killAfterMs more have passed, the bench SIGKILLs the last rank's worker by the pid it
// gave; the sample is the time from that kill to the later of the first lines of attempt
// 1's workers. Then it kills attempt 1's workers too, which spends the budget: the
// launcher must end the run and exit non-zero.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nowMs } from '../lib/clock.js';
import { onTeardown } from '../lib/teardown.js';

export const RESTART_WORKER = 'bench/rankd/restart-worker.py';
/** How long a worker lives at most (s): a run the bench lost track of ends by itself. */
export const WORKER_LIFE_S = 120;
const START_TIMEOUT_MS = 60_000;
const RESTART_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 30_000;
const TAIL = 2048;

interface Hello {
  rank: number;
  attempt: number;
  pid: number;
  /** nowMs() when the line reached the bench. */
  at: number;
}

export interface RestartSample {
  /** From the SIGKILL to the later of attempt 1's first lines. */
  ms: number;
  /** The launcher's exit code once the budget was spent (it must not be 0). */
  exitCode: number | null;
}

let serial = 0;

/** The worker's argv: the interpreter, the script, the socket to report on, its longest life. */
export function workerArgv(repoRoot: string, python: string, socketPath: string): string[] {
  return [python, path.join(repoRoot, RESTART_WORKER), socketPath, String(WORKER_LIFE_S)];
}

/**
 * Times one restart. `launcher(socketPath)` is the argv to run; it runs in its own process
 * group, killed as a group if it does not end once the budget is spent.
 */
export async function timeRestart(opts: {
  dir: string;
  ranks: number;
  /** How long attempt 0 runs before the kill: a failure mid-run, not at the start. */
  killAfterMs: number;
  env: NodeJS.ProcessEnv;
  launcher: (socketPath: string) => Promise<string[]> | string[];
}): Promise<RestartSample> {
  const socketPath = path.join(opts.dir, `restart-${++serial}.sock`);
  const hellos: Hello[] = [];
  let wake: () => void = () => {};
  const server = net.createServer((conn) => {
    let text = '';
    conn.setEncoding('utf8');
    conn.on('data', (chunk: string) => {
      text += chunk;
      const m = /^first rank=(\d+) attempt=(\d+) pid=(\d+)\n/.exec(text);
      if (!m) return;
      hellos.push({ rank: Number(m[1]), attempt: Number(m[2]), pid: Number(m[3]), at: nowMs() });
      text = '';
      wake();
    });
    conn.on('error', () => {});
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, resolve);
  });
  const argv = await opts.launcher(socketPath);
  const child = spawn(argv[0]!, argv.slice(1), { env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let tail = '';
  const keep = (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-TAIL));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exit = new Promise<void>((resolve) => {
    child.once('close', (code, signal) => {
      exited = { code, signal };
      wake();
      resolve();
    });
    // a launcher that cannot be spawned: its error goes into the tail the waits report
    child.once('error', (err) => {
      keep(Buffer.from(`spawn ${argv[0]}: ${err.message}\n`));
      exited = { code: null, signal: null };
      wake();
      resolve();
    });
  });
  const killGroup = () => {
    if (exited || child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const untrack = onTeardown(`restart probe ${argv[0]}`, killGroup);

  /** The hellos of `attempt` once every rank's is in; throws at the deadline or at the launcher's exit. */
  const everyRank = async (attempt: number, timeoutMs: number): Promise<Hello[]> => {
    const deadline = nowMs() + timeoutMs;
    for (;;) {
      const seen = hellos.filter((h) => h.attempt === attempt);
      if (new Set(seen.map((h) => h.rank)).size === opts.ranks) return seen;
      const how = exited ? `the launcher exited (${exited.code ?? exited.signal})` : null;
      if (how || nowMs() > deadline)
        throw new Error(
          `${how ?? `${timeoutMs / 1000} s passed`} before every rank of attempt ${attempt} started ` +
            `(${seen.length} of ${opts.ranks} did): ${tail.trim().split('\n').slice(-3).join(' | ')}`,
        );
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 200);
      });
    }
  };

  try {
    const first = await everyRank(0, START_TIMEOUT_MS);
    const victim = first.reduce((a, b) => (b.rank > a.rank ? b : a));
    await sleep(opts.killAfterMs);
    if (exited)
      throw new Error(`the launcher exited before the kill: ${tail.trim().split('\n').slice(-3).join(' | ')}`);
    const killedAt = nowMs();
    process.kill(victim.pid, 'SIGKILL');
    const second = await everyRank(1, RESTART_TIMEOUT_MS);
    const ms = Math.max(...second.map((h) => h.at)) - killedAt;
    for (const h of second) {
      try {
        process.kill(h.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await Promise.race([exit, sleep(EXIT_TIMEOUT_MS)]);
    const end = exited as { code: number | null; signal: NodeJS.Signals | null } | null;
    if (!end) throw new Error(`the launcher did not exit ${EXIT_TIMEOUT_MS / 1000} s after its budget was spent`);
    if (end.code === 0) throw new Error('the launcher exited 0 after its last attempt was killed');
    return { ms, exitCode: end.code };
  } finally {
    killGroup();
    untrack.forget();
    server.close();
  }
}
