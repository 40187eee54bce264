// Bundles the compiled CLI (packages/cli/dist/cli.js, after `tsc -b`) into
// packages/cli/dist/bundle/: rankd.js, the entry (commander, the command table, error
// handling), and one chunk per command module with what only it uses, split by esbuild
// at the same dynamic imports the compiled CLI loads lazily, so that each command still
// loads only its own code. Node then reads a few files instead of resolving and compiling
// some 100 modules one by one: that is what the bundle saves at every start.
//
// The daemons stay out: `@rankd/controller` and `@rankd/agent` (fastify, SQLite's native
// addon, the dashboard's files, the rank supervisor found next to their own modules) are
// imported from their packages' dist at run time, as before; `rankd agent`
// through `@rankd/agent`, whose loadDaemon() loads the agent's own bundle
// (scripts/bundle-agent.mjs) relative to itself.
//
// manifest.json maps each output file to the source modules in it: what
// test/cli/loaded-modules.test.ts reads to tell what a command loaded.
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build, nodeEsm, root } from './lib/node-bundle.mjs';

const cli = path.join(root, 'packages/cli');
const outdir = path.join(cli, 'dist/bundle');

/** Imported from their packages at run time, never bundled (see above). */
const DAEMONS = new Set(['@rankd/controller', '@rankd/agent']);

const daemonsExternal = {
  name: 'daemons-external',
  setup(b) {
    b.onResolve({ filter: /^@rankd\/(controller|agent)$/ }, (args) =>
      DAEMONS.has(args.path) ? { path: args.path, external: true } : undefined,
    );
  },
};

// the CLI's response checks, one module per route, which the bundle takes in as chunks
await import('./cli-response-checks.mjs');

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  ...nodeEsm,
  entryPoints: { rankd: path.join(cli, 'dist/cli.js') },
  outdir,
  splitting: true,
  // chunks sit beside each other one level under dist/, as dist/commands/*.js do, so that
  // the URLs the CLI resolves against its own module (../main.js, ../../demo/) still hold
  chunkNames: '[name]-[hash]',
  // ws's optional native speed-ups, required inside a try: absent is fine
  external: ['bufferutil', 'utf-8-validate'],
  plugins: [daemonsExternal],
});

const manifest = {};
for (const [file, output] of Object.entries(result.metafile.outputs)) {
  manifest[path.relative(outdir, path.join(root, file))] = Object.keys(output.inputs).map((input) =>
    path.relative(root, path.join(root, input)),
  );
}
// written last, after the bundle's files: a manifest names only files that exist
writeFileSync(path.join(outdir, 'manifest.json'), JSON.stringify(manifest, null, 1) + '\n');
const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
process.stdout.write(
  `bundle-cli: ${Object.keys(manifest).length} files, ${(bytes / 1024).toFixed(0)} KiB in ${path.relative(root, outdir)}\n`,
);
