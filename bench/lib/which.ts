// Command lookup without a shell. The sbin folders are searched too: slurmctld and slurmd
// live there, and a non-login root shell does not always have them on PATH.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

export function which(command: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), ...SBIN];
  for (const dir of dirs) {
    const candidate = path.join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}
