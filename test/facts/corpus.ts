// The hwloc Linux conformance corpus (../shared/conformance/hwloc-linux): where it is,
// what each dump expects, and how to unpack one. Tests skip, saying so, when it is absent.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';

export const CORPUS = fileURLToPath(new URL('../../../shared/conformance/hwloc-linux', import.meta.url));

export interface ExpectedCounts {
  packages: number | null;
  numaNodes: number | null;
  cores: number | null;
  pus: number | null;
}

export interface DumpExpectation {
  root: string;
  note?: string;
  quirk?: string;
  allowed: ExpectedCounts;
  disallowed?: ExpectedCounts;
  gpuNumaNodesKept?: ExpectedCounts;
}

export function corpusPresent(): boolean {
  return existsSync(join(CORPUS, 'expected.json')) && existsSync(join(CORPUS, 'tarballs'));
}

export function loadExpectations(): Map<string, DumpExpectation> {
  const json = JSON.parse(readFileSync(join(CORPUS, 'expected.json'), 'utf8')) as {
    dumps: Record<string, DumpExpectation>;
  };
  return new Map(Object.entries(json.dumps));
}

/** hwloc's .test file of a dump, when it has one (options, env, synthetic topology). */
export function hwlocTestSpec(tarball: string): string | null {
  const name = tarball.replace(/\.tar\.bz2$/, '');
  for (const candidate of [name, name.replace(/\.fsroot$/, '')]) {
    const path = join(CORPUS, 'expected', `${candidate}.test`);
    if (existsSync(path)) return readFileSync(path, 'utf8');
  }
  return null;
}

/**
 * Unpacks a dump into a fresh temp dir and returns its filesystem root. A dump that holds
 * only cgroup files for a synthetic topology (hwloc's "synthetic:" tests) gets that
 * topology written as sysfs by the fixture builder underneath, as hwloc combined them.
 */
export function extractDump(
  tarball: string,
  expectation: DumpExpectation,
): { root: string; cleanup: () => void; synthetic: string | null } {
  const dir = mkdtempSync(join(scratch(), 'rankd-hwloc-'));
  const tar = spawnSync('tar', ['xjf', join(CORPUS, 'tarballs', tarball), '-C', dir], { encoding: 'utf8' });
  if (tar.status !== 0) throw new Error(`tar xjf ${tarball} failed: ${tar.stderr}`);
  const root = join(dir, expectation.root);
  const synthetic = /^synthetic:\s*(.+)$/m.exec(hwlocTestSpec(tarball) ?? '')?.[1]?.trim() ?? null;
  if (synthetic) {
    const base = mkdtempSync(join(scratch(), 'rankd-synthetic-'));
    buildSysfs(base, syntheticMachine(synthetic));
    // the dump brings its own process view (cpuset name, mounts)
    rmSync(join(base, 'sys/fs/cgroup'), { recursive: true, force: true });
    rmSync(join(base, 'proc/self/cgroup'), { force: true });
    cpSync(root, base, { recursive: true });
    return {
      root: base,
      synthetic,
      cleanup: () => [dir, base].forEach((d) => rmSync(d, { recursive: true, force: true })),
    };
  }
  return { root, synthetic: null, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** hwloc synthetic descriptions of the form "[pack:P] [numa:N] core:C pu:T", numbered in tree order. */
export function syntheticMachine(desc: string): MachineSpec {
  const levels = new Map(desc.split(/\s+/).map((l) => l.split(':') as [string, string]));
  const count = (k: string) => Number(levels.get(k) ?? 1);
  const packages = count('pack') * count('package');
  const numa = count('numa');
  return {
    packages,
    coresPerPackage: numa * count('core'),
    threadsPerCore: count('pu'),
    numaPerPackage: numa,
    numbering: 'adjacent',
  };
}

/** A tmpfs when there is one: the big dumps hold ten thousand files each. */
function scratch(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}
