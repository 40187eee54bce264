// The peers come from Debian's archive, installed only when missing. One `apt-get update`
// per run at most, and a dpkg lock timeout, because other work on the same machine may be
// installing packages at the same moment.
//
// MPI commands are named in full (mpirun.openmpi, mpiexec.hydra, mpicc.mpich): installing
// mpich takes over the plain mpirun/mpicc/mpiexec alternatives, so `mpirun` may be hydra.
import { execFileSync } from 'node:child_process';
import type { PeerCommand } from '../lib/figure.js';
import { runProcess } from '../lib/process-timing.js';
import { which } from '../lib/which.js';

/**
 * Each peer command, the binaries it needs and the Debian packages that ship them.
 * `headers` are packages that ship no binary to look for (an MPI's mpi.h); dpkg is asked.
 */
export const PEER_PACKAGES: Record<PeerCommand, { pkgs: string[]; binaries: string[]; headers?: string[] }> = {
  lstopo: { pkgs: ['hwloc'], binaries: ['lstopo'] },
  'mpirun.openmpi': { pkgs: ['openmpi-bin'], binaries: ['mpirun.openmpi'] },
  'mpicc.openmpi': {
    pkgs: ['openmpi-bin', 'libopenmpi-dev'],
    binaries: ['mpicc.openmpi'],
    headers: ['libopenmpi-dev'],
  },
  'mpiexec.hydra': {
    pkgs: ['mpich', 'libmpich-dev'],
    binaries: ['mpiexec.hydra', 'mpicc.mpich'],
    headers: ['libmpich-dev'],
  },
  srun: { pkgs: ['slurm-wlm'], binaries: ['srun', 'slurmctld', 'slurmd'] },
  ansible: { pkgs: ['ansible-core'], binaries: ['ansible'] },
  torchrun: { pkgs: ['python3-torch'], binaries: ['torchrun'] },
};

export interface PeerAvailability {
  /** Peer command → null when usable, else why not. */
  missing: Map<PeerCommand, string>;
  installed: string[];
}

const UPDATE_TIMEOUT_MS = 5 * 60_000;
const INSTALL_TIMEOUT_MS = 15 * 60_000;

function isMissing(peer: PeerCommand): boolean {
  const { binaries, headers = [] } = PEER_PACKAGES[peer];
  return binaries.some((b) => which(b) === null) || headers.some((pkg) => !dpkgInstalled(pkg));
}

/** True when dpkg lists the package as installed; true too where there is no dpkg to ask (not Debian). */
function dpkgInstalled(pkg: string): boolean {
  if (!which('dpkg-query')) return true;
  try {
    return (
      execFileSync('dpkg-query', ['-W', '-f=${db:Status-Status}', pkg], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: 10_000,
      }).trim() === 'installed'
    );
  } catch {
    return false;
  }
}

export async function ensurePeers(peers: readonly PeerCommand[], log: (m: string) => void): Promise<PeerAvailability> {
  const wanted = [...new Set(peers)].filter(isMissing);
  const missing = new Map<PeerCommand, string>();
  const installed: string[] = [];
  if (wanted.length === 0) return { missing, installed };
  const pkgs = [...new Set(wanted.flatMap((p) => PEER_PACKAGES[p].pkgs))];
  if (process.getuid?.() !== 0) {
    for (const p of wanted) missing.set(p, `${PEER_PACKAGES[p].pkgs.join(' ')} not installed and this run is not root`);
    return { missing, installed };
  }
  log(`installing peers from Debian: ${pkgs.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const lock = ['-o', 'DPkg::Lock::Timeout=300'];
  const update = await runProcess(['apt-get', ...lock, 'update', '-qq'], { timeoutMs: UPDATE_TIMEOUT_MS, env });
  if (update.code !== 0)
    log(`apt-get update failed (${update.stderrTail.trim().split('\n').at(-1)}); trying the install anyway`);
  const install = await runProcess(['apt-get', ...lock, 'install', '-y', '-qq', '--no-install-recommends', ...pkgs], {
    timeoutMs: INSTALL_TIMEOUT_MS,
    env,
  });
  const why = install.timedOut
    ? 'apt-get install timed out'
    : `apt-get install exited with ${install.code}: ${install.stderrTail.trim().split('\n').at(-1) ?? ''}`;
  for (const p of wanted) {
    if (isMissing(p)) missing.set(p, `${PEER_PACKAGES[p].pkgs.join(' ')} could not be installed (${why})`);
    else installed.push(...PEER_PACKAGES[p].pkgs);
  }
  return { missing, installed: [...new Set(installed)] };
}
