// The peers come from Debian's archive, installed only when missing. One `apt-get update`
// per run at most, and a dpkg lock timeout, because other work on the same machine may be
// installing packages at the same moment.
import type { PeerCommand } from '../lib/figure.js';
import { runProcess } from '../lib/process-timing.js';
import { which } from '../lib/which.js';

/** Each peer command, the binaries it needs and the Debian package that ships them. */
export const PEER_PACKAGES: Record<PeerCommand, { pkg: string; binaries: string[] }> = {
  lstopo: { pkg: 'hwloc', binaries: ['lstopo'] },
  mpirun: { pkg: 'openmpi-bin', binaries: ['mpirun'] },
  srun: { pkg: 'slurm-wlm', binaries: ['srun', 'slurmctld', 'slurmd'] },
  ansible: { pkg: 'ansible-core', binaries: ['ansible'] },
};

export interface PeerAvailability {
  /** Peer command → null when usable, else why not. */
  missing: Map<PeerCommand, string>;
  installed: string[];
}

const UPDATE_TIMEOUT_MS = 5 * 60_000;
const INSTALL_TIMEOUT_MS = 15 * 60_000;

function isMissing(peer: PeerCommand): boolean {
  return PEER_PACKAGES[peer].binaries.some((b) => which(b) === null);
}

export async function ensurePeers(peers: readonly PeerCommand[], log: (m: string) => void): Promise<PeerAvailability> {
  const wanted = [...new Set(peers)].filter(isMissing);
  const missing = new Map<PeerCommand, string>();
  const installed: string[] = [];
  if (wanted.length === 0) return { missing, installed };
  const pkgs = [...new Set(wanted.map((p) => PEER_PACKAGES[p].pkg))];
  if (process.getuid?.() !== 0) {
    for (const p of wanted) missing.set(p, `${PEER_PACKAGES[p].pkg} is not installed and this run is not root`);
    return { missing, installed };
  }
  log(`installing peers from Debian: ${pkgs.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const lock = ['-o', 'DPkg::Lock::Timeout=300'];
  const update = await runProcess(['apt-get', ...lock, 'update', '-qq'], { timeoutMs: UPDATE_TIMEOUT_MS, env });
  if (update.code !== 0) log(`apt-get update failed (${update.stderrTail.trim().split('\n').at(-1)}); trying the install anyway`);
  const install = await runProcess(
    ['apt-get', ...lock, 'install', '-y', '-qq', '--no-install-recommends', ...pkgs],
    { timeoutMs: INSTALL_TIMEOUT_MS, env },
  );
  const why = install.timedOut
    ? 'apt-get install timed out'
    : `apt-get install exited with ${install.code}: ${install.stderrTail.trim().split('\n').at(-1) ?? ''}`;
  for (const p of wanted) {
    if (isMissing(p)) missing.set(p, `${PEER_PACKAGES[p].pkg} could not be installed (${why})`);
    else installed.push(PEER_PACKAGES[p].pkg);
  }
  return { missing, installed };
}
