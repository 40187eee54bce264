// The CLI's bundle (scripts/bundle-cli.mjs), as the figures that time `rankd …` see it:
// dist/main.js always runs the bundle (RANKD_DEV=1 alone runs the compiled modules), and
// `npm run bench` runs `npm run build` first, which makes it.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

function bundleDir(repoRoot: string): string {
  return path.join(repoRoot, 'packages/cli/dist/bundle');
}

/** A sentence for the figure's notes: what rankd ran from. */
export function ensureCliBundle(repoRoot: string): string {
  if (!existsSync(path.join(bundleDir(repoRoot), 'rankd.js')))
    throw new Error('the CLI is not bundled: run `npm run build` (npm run bench does)');
  return 'rankd ran from its bundle (packages/cli/dist/bundle/, made by `npm run build`), as an installed rankd does.';
}

/** The bundle's file holding a compiled module (e.g. packages/topology/dist/index.js), or null. */
export function bundleFileOf(repoRoot: string, module: string): string | null {
  const manifest = path.join(bundleDir(repoRoot), 'manifest.json');
  if (!existsSync(manifest)) return null;
  const files = JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, string[]>;
  const file = Object.keys(files).find((f) => files[f]!.includes(module));
  return file ? path.join(bundleDir(repoRoot), file) : null;
}
