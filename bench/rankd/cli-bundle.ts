// The CLI's bundle (scripts/bundle-cli.mjs), as the figures that time `rankd …` need it:
// `npm run bench` compiles (tsc -b) but does not bundle, and dist/main.js runs the compiled
// modules when a compile is newer than the bundle. Users run the bundle (npm install and
// npm run build make it), so a figure makes it current first and says so.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const COMPILES = ['cli', 'protocol', 'agent', 'controller'].map((p) => `packages/${p}/dist/.tsbuildinfo`);

function bundleDir(repoRoot: string): string {
  return path.join(repoRoot, 'packages/cli/dist/bundle');
}

function current(repoRoot: string): boolean {
  const made = statSync(path.join(bundleDir(repoRoot), 'rankd.js'), { throwIfNoEntry: false })?.mtimeMs;
  return made !== undefined && COMPILES.every((f) => (statSync(path.join(repoRoot, f), { throwIfNoEntry: false })?.mtimeMs ?? 0) <= made);
}

/** Bundles the CLI when its bundle is missing or older than a compile; a sentence for the figure's notes. */
export function ensureCliBundle(repoRoot: string): string {
  if (current(repoRoot)) return 'rankd ran from its bundle (packages/cli/dist/bundle/, made by `npm run build`), as an installed rankd does.';
  execFileSync(process.execPath, [path.join(repoRoot, 'scripts/bundle-cli.mjs')], { stdio: 'ignore', timeout: 120_000 });
  return 'rankd ran from its bundle (packages/cli/dist/bundle/), which the figure made first (`node scripts/bundle-cli.mjs`): the last compile was newer than it.';
}

/** The bundle's file holding a compiled module (e.g. packages/agent/dist/facts/index.js), or null. */
export function bundleFileOf(repoRoot: string, module: string): string | null {
  const manifest = path.join(bundleDir(repoRoot), 'manifest.json');
  if (!existsSync(manifest)) return null;
  const files = JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, string[]>;
  const file = Object.keys(files).find((f) => files[f]!.includes(module));
  return file ? path.join(bundleDir(repoRoot), file) : null;
}
