// torchrun, from Debian's python3-torch (torch 1.13 under /usr/bin/python3): one node, its
// workers on loopback, restarted as a group by its elastic agent (`--max_restarts`).
//
// Torch 1.13 knows its options by their underscore names only (--nproc_per_node, not
// --nproc-per-node). On Debian 12 (Python 3.11) torchrun cannot parse its own default
// `--redirects 0 --tee 0`: Std.from_str looks the value up by iterating the IntFlag, which
// skips 0 (and 3) there, returns None, and the agent fails on its first start. So every run
// here passes `--redirects 1 --tee 1`: the workers' stdout goes to log files that torchrun
// tails back to its own stdout as "[default<LOCAL_RANK>]:…", stderr as it is.
import { existsSync } from 'node:fs';
import { freeLoopbackPort } from '../lib/ports.js';

export const TORCHRUN = '/usr/bin/torchrun';
/** The interpreter that sees Debian's torch (shared/docs/recipes.md); the workers run under it. */
export const DEBIAN_PYTHON = '/usr/bin/python3';
/** torchrun's own default: how often its agent looks at its workers. */
export const DEFAULT_MONITOR_INTERVAL_S = 5;

/** null when torchrun can run here, else why not. */
export function whyNoTorchrun(): string | null {
  if (!existsSync(TORCHRUN)) return `${TORCHRUN} is not installed (Debian package python3-torch)`;
  return null;
}

/**
 * `torchrun --nnodes 1 --nproc_per_node N --max_restarts R … worker…` on 127.0.0.1 with
 * the static rendezvous (torchrun's default) on a port the kernel picked, so that two runs
 * never meet on torchrun's fixed default (29500).
 */
export async function torchrunArgv(opts: {
  nproc: number;
  maxRestarts: number;
  /** torchrun's default (5 s) when absent. */
  monitorIntervalS?: number;
  logDir: string;
  /** The worker's script and its arguments; run with torchrun's own interpreter. */
  worker: readonly string[];
}): Promise<string[]> {
  const port = await freeLoopbackPort();
  return [
    TORCHRUN,
    '--nnodes',
    '1',
    '--nproc_per_node',
    String(opts.nproc),
    '--max_restarts',
    String(opts.maxRestarts),
    ...(opts.monitorIntervalS !== undefined ? ['--monitor_interval', String(opts.monitorIntervalS)] : []),
    '--master_addr',
    '127.0.0.1',
    '--master_port',
    String(port),
    '--redirects',
    '1',
    '--tee',
    '1',
    '--log_dir',
    opts.logDir,
    ...opts.worker,
  ];
}

/** What torchrun's workers need in their environment on one host: loopback for gloo, one OpenMP thread each. */
export function torchrunEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, OMP_NUM_THREADS: '1', GLOO_SOCKET_IFNAME: 'lo' };
}
