// What the CLI's and the agent's bundles (bundle-cli.mjs, bundle-agent.mjs) share: the
// repository root, esbuild, and the options of an ESM bundle that Node runs.
//
// esbuild is the dashboard's devDependency (packages/dashboard/package.json) and is taken
// from there: declaring it again elsewhere would need a lock file update for the same package.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const { build } = createRequire(path.join(root, 'packages/dashboard/package.json'))('esbuild');

/** esbuild options of a Node 20 ESM bundle; each script adds its entry, outdir and externals. */
export const nodeEsm = {
  absWorkingDir: root,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // commander, ws and pino are CommonJS: their require() of Node's modules needs a require here
  banner: {
    js: "import { createRequire as __rankdCreateRequire } from 'node:module'; const require = __rankdCreateRequire(import.meta.url);",
  },
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
};
