// hwloc's captured Linux trees (shared/conformance/hwloc-linux): real machines far larger
// than this one, for figures that must say how rankd scales with the CPU count.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { timeProcess } from './process-timing.js';

export interface DumpCounts {
  packages: number | null;
  numaNodes: number | null;
  cores: number | null;
  pus: number | null;
}

export interface Dump {
  tarball: string;
  /** Filesystem root inside the extraction folder. */
  root: string;
  allowed: DumpCounts | null;
  disallowed: DumpCounts | null;
}

export function conformanceDir(repoRoot: string): string {
  return process.env.RANKD_CONFORMANCE_DIR ?? path.resolve(repoRoot, '../shared/conformance/hwloc-linux');
}

export function listDumps(repoRoot: string): Dump[] | null {
  const file = path.join(conformanceDir(repoRoot), 'expected.json');
  if (!existsSync(file)) return null;
  const data = JSON.parse(readFileSync(file, 'utf8')) as {
    dumps: Record<string, { root: string; allowed?: DumpCounts; disallowed?: DumpCounts }>;
  };
  return Object.entries(data.dumps).map(([tarball, d]) => ({
    tarball,
    root: d.root,
    allowed: d.allowed ?? null,
    disallowed: d.disallowed ?? null,
  }));
}

/** The dump's name without the archive suffix, as the corpus README names it. */
export function dumpName(d: Dump): string {
  return d.tarball.replace(/\.tar\.bz2$/, '');
}

/** Extracts once per directory and returns the filesystem root to hand to readFacts. */
export async function extractDump(repoRoot: string, dump: Dump, into: string): Promise<string> {
  const root = path.join(into, dump.root);
  if (existsSync(root)) return root;
  mkdirSync(into, { recursive: true });
  await timeProcess(['tar', 'xjf', path.join(conformanceDir(repoRoot), 'tarballs', dump.tarball), '-C', into], {
    timeoutMs: 120_000,
  });
  if (!existsSync(root)) throw new Error(`${dump.tarball}: no ${dump.root} after extraction`);
  return root;
}
