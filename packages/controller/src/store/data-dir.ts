// The controller's data directory holds its CA key, the bootstrap admin token, the store
// (which keeps submitted environments and the audit log) and every job's output: only its
// owner may read any of it. It is created 0700 and each file in it 0600, whatever the
// umask; a directory from an older release (rankd.db and its WAL were created 0644) is
// tightened at every start.
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const DIR_MODE = 0o700;
const FILE_MODE = 0o600;

/**
 * Creates the data directory or tightens an existing one: the directory and its
 * subdirectories (logs/) 0700, its files 0600. Files below the subdirectories are not
 * walked (a job's logs may be many): their 0700 parents already close them to others, and
 * they are created 0600. Symbolic links are left alone, never followed. Returns the paths
 * whose modes were changed, for the log.
 */
export function secureDataDir(dataDir: string): string[] {
  mkdirSync(dataDir, { recursive: true, mode: DIR_MODE });
  const tightened: string[] = [];
  const tighten = (path: string, mode: number) => {
    const current = lstatSync(path).mode & 0o777;
    if ((current & ~mode) === 0) return;
    chmodSync(path, current & mode);
    tightened.push(path);
  };
  tighten(dataDir, DIR_MODE);
  for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
    const path = join(dataDir, entry.name);
    if (entry.isDirectory()) tighten(path, DIR_MODE);
    else if (entry.isFile()) tighten(path, FILE_MODE);
  }
  return tightened;
}
