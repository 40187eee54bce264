// The same command under srun (a throw-away local Slurm, bench/peers/slurm.ts) and under
// `rankd run` (a real controller and agent), for the parity suites in test/cli/parity-*.
// Each side is a real client process given exactly the environment and stdin a row names,
// so a row compares what a user of either tool would see.
import { spawn } from 'node:child_process';
import type { Test } from 'tap';
import { startLocalSlurm } from '../../bench/peers/slurm.js';
import { which } from '../../bench/lib/which.js';
import { localCluster } from './cluster.js';
import { CLI } from './daemons.js';
import { scratchDir } from './scratch.js';

export interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ParityCall {
  /** The client's whole environment besides what points it at its cluster; PATH is added when absent. */
  env?: Record<string, string>;
  /** Written to the client's stdin, then closed; without it stdin is /dev/null. */
  stdin?: string | Uint8Array;
  timeoutMs?: number;
}

export interface ParityRig {
  /** `srun --immediate=1 --quiet ARGS…` against the local Slurm. */
  srun(args: readonly string[], call?: ParityCall): Promise<Outcome>;
  /** `rankd run -q ARGS…` against the local controller. */
  rankd(args: readonly string[], call?: ParityCall): Promise<Outcome>;
  /** What points rankd's client at its cluster (RANKD_URL, RANKD_TOKEN, …), added to each rankd call's environment. */
  rankdClientEnv: NodeJS.ProcessEnv;
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Why the parity suites cannot run here, or null. They need root (srun as root, ranks as
 * other users) and Debian's slurm-wlm; in CI both are given, so a missing one fails.
 */
export function parityMissing(): string | null {
  const missing = ['slurmctld', 'slurmd', 'srun', 'sinfo'].filter((b) => !which(b));
  const why =
    process.getuid?.() !== 0
      ? 'srun parity needs root (srun --uid, ranks as other users)'
      : missing.length > 0
        ? `${missing.join(', ')} not installed (Debian package slurm-wlm; npm test installs it as root)`
        : null;
  if (why && process.env['CI'] === 'true') throw new Error(`${why}: CI must run the srun parity suites`);
  return why;
}

/** Starts a local Slurm and a one-node rankd cluster, both torn down with t. */
export async function parityRig(t: Test): Promise<ParityRig> {
  const slurmDir = scratchDir('rankd-parity-slurm-');
  const slurm = await startLocalSlurm(slurmDir, (m) => t.comment(m));
  t.teardown(() => slurm.stop());
  const cluster = await localCluster(t, ['parity']);
  const clientEnv = (call: ParityCall | undefined, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
    PATH: DEFAULT_PATH,
    ...(call?.env ?? {}),
    ...extra,
  });
  return {
    srun: (args, call) =>
      runClient('srun', ['--immediate=1', '--quiet', ...args], clientEnv(call, { SLURM_CONF: slurm.confPath }), call),
    rankd: (args, call) => runClient(process.execPath, [CLI, 'run', '-q', ...args], clientEnv(call, cluster.env), call),
    rankdClientEnv: cluster.env,
  };
}

function runClient(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  call: ParityCall | undefined,
): Promise<Outcome> {
  const timeoutMs = call?.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, stdio: [call?.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout!.on('data', (d: Buffer) => stdout.push(d));
    child.stderr!.on('data', (d: Buffer) => stderr.push(d));
    if (call?.stdin !== undefined) {
      // a client may stop reading before the end (its rank exited): EPIPE is its answer, not a failure
      child.stdin!.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EPIPE') reject(err);
      });
      child.stdin!.end(call.stdin);
    }
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`${file} ${args.join(' ')} took over ${timeoutMs} ms; stderr: ${Buffer.concat(stderr).toString()}`),
      );
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      });
    });
  });
}
