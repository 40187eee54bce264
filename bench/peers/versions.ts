// The versions of the peers a figure ran against, read from the tools themselves.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { which } from '../lib/which.js';
import { systeminformationVersion } from './systeminformation.js';

const run = promisify(execFile);

const PROBES: Record<string, { argv: string[]; pick: RegExp }> = {
  lstopo: { argv: ['lstopo', '--version'], pick: /lstopo\s+(\S+)/ },
  // called by its full name it says "(OpenRTE)", as plain mpirun says "(Open MPI)"
  'mpirun.openmpi': { argv: ['mpirun.openmpi', '--version'], pick: /\((?:Open MPI|OpenRTE)\)\s+(\S+)/ },
  'mpiexec.hydra': { argv: ['mpiexec.hydra', '--version'], pick: /Version:\s+(\S+)/ },
  // srun --version wants a config file; slurmd -V does not, and ships in the same build.
  srun: { argv: ['slurmd', '-V'], pick: /slurm(?:-wlm)?\s+(\S+)/ },
  ansible: { argv: ['ansible', '--version'], pick: /core\s+([\d.]+)/ },
  // torchrun prints no version; the package that ships it does
  torchrun: { argv: ['dpkg-query', '-W', '-f=${Version}', 'python3-torch'], pick: /^(\S+)/ },
};

const LABELS: Record<string, string> = {
  lstopo: 'hwloc (lstopo)',
  'mpirun.openmpi': 'Open MPI (mpirun.openmpi)',
  'mpiexec.hydra': 'MPICH (mpiexec.hydra)',
  srun: 'Slurm (srun)',
  ansible: 'ansible-core',
  torchrun: 'torch (torchrun, Debian python3-torch)',
  systeminformation: 'systeminformation (npm)',
};

export async function peerVersions(peers: readonly string[], repoRoot: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const peer of peers) {
    const label = LABELS[peer] ?? peer;
    if (peer === 'systeminformation') {
      const v = systeminformationVersion(repoRoot);
      if (v) out[label] = v;
      continue;
    }
    const probe = PROBES[peer];
    if (!probe || !which(probe.argv[0]!)) continue;
    try {
      const { stdout, stderr } = await run(probe.argv[0]!, probe.argv.slice(1), { timeout: 15_000 });
      const text = `${stdout}\n${stderr}`;
      out[label] = probe.pick.exec(text)?.[1] ?? text.trim().split('\n')[0] ?? 'unknown';
    } catch (err) {
      out[label] = `unknown (${(err as Error).message.split('\n')[0]})`;
    }
  }
  return out;
}
