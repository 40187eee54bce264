// Whether this machine can build a cluster: root, iproute2 with network namespaces.
// In CI (CI=true, as root) the cluster tests must run: a missing requirement there is a
// failure, never a skip. Elsewhere they skip and say why.
import { execFileSync } from 'node:child_process';
import type { Test } from 'tap';
import { ip, which } from './commands.js';

export const IN_CI = process.env['CI'] === 'true';

let clusterWhy: string | null | undefined;
let torchWhy: string | null | undefined;

/** Why no cluster can be built here, or null when it can. */
export function clusterUnsupported(): string | null {
  if (clusterWhy !== undefined) return clusterWhy;
  clusterWhy = (() => {
    if (process.platform !== 'linux') return 'network namespaces need Linux';
    if (process.getuid?.() !== 0) return 'network namespaces need root';
    if (!which('ip')) return '`ip` (iproute2) is not installed';
    try {
      ip('netns', 'list');
    } catch (err) {
      return `\`ip netns\` does not work here: ${(err as Error).message}`;
    }
    return null;
  })();
  return clusterWhy;
}

/** Why Debian's torch cannot be used, or null when /usr/bin/python3 imports it. */
export function torchUnsupported(): string | null {
  if (torchWhy !== undefined) return torchWhy;
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import torch, torch.distributed as d; assert d.is_gloo_available()'], {
      stdio: 'ignore',
      timeout: 120_000,
    });
    torchWhy = null;
  } catch {
    torchWhy =
      '/usr/bin/python3 cannot import torch with gloo (apt-get install python3-torch; scripts/test-deps.sh does it in CI)';
  }
  return torchWhy;
}

/**
 * A top-level cluster test: skipped with the reason where the machine cannot run it, failed
 * with the reason in CI, run otherwise.
 */
export function clusterTest(
  t: Test,
  name: string,
  opts: { needsTorch?: boolean; timeout: number },
  fn: (t: Test) => Promise<void>,
): void {
  const why = clusterUnsupported() ?? (opts.needsTorch ? torchUnsupported() : null);
  if (why === null) {
    void t.test(name, { timeout: opts.timeout }, fn);
  } else if (IN_CI) {
    void t.test(name, async (t) => {
      t.fail(`cluster tests must run in CI, but ${why}`);
    });
  } else {
    void t.test(name, { skip: `cluster test skipped: ${why}` }, async () => {});
  }
}
