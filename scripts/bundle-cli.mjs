// Bundles the compiled CLI (packages/cli/dist/cli.js, after `tsc -b`) into
// packages/cli/dist/bundle/: rankd.js, the entry (commander, the command table, error
// handling), and one chunk per command module with what only it uses, split by esbuild
// at the same dynamic imports the compiled CLI loads lazily, so that each command still
// loads only its own code. Node then reads a few files instead of resolving and compiling
// some 100 modules one by one: that is what the bundle saves at every start.
//
// The daemons stay out: `@rankd/controller` and `@rankd/agent` (fastify, SQLite's native
// addon, the dashboard's files, the rank launcher and perl scripts found next to their own
// modules) are imported from their packages' dist at run time, as before; `rankd agent`
// through `@rankd/agent/load-daemon`, which loads the agent's own bundle
// (scripts/bundle-agent.mjs) relative to itself.
//
// manifest.json maps each output file to the source modules in it: what
// test/cli/loaded-modules.test.ts reads to tell what a command loaded.
//
// esbuild is the dashboard's devDependency (packages/dashboard/package.json) and is taken
// from there: declaring it again elsewhere would need a lock file update for the same package.
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'packages/cli');
const outdir = path.join(cli, 'dist/bundle');
const { build } = createRequire(path.join(root, 'packages/dashboard/package.json'))('esbuild');

/** Imported from their packages at run time, never bundled (see above). */
const DAEMONS = new Set(['@rankd/controller', '@rankd/agent', '@rankd/agent/load-daemon']);

const daemonsExternal = {
  name: 'daemons-external',
  setup(b) {
    b.onResolve({ filter: /^@rankd\/(controller|agent)(\/load-daemon)?$/ }, (args) => (DAEMONS.has(args.path) ? { path: args.path, external: true } : undefined));
  },
};

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { rankd: path.join(cli, 'dist/cli.js') },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // chunks sit beside each other one level under dist/, as dist/commands/*.js do, so that
  // the URLs the CLI resolves against its own module (../main.js, ../../demo/) still hold
  chunkNames: '[name]-[hash]',
  // commander and ws are CommonJS: their require() of Node's modules needs a require here
  banner: { js: "import { createRequire as __rankdCreateRequire } from 'node:module'; const require = __rankdCreateRequire(import.meta.url);" },
  // ws's optional native speed-ups, required inside a try: absent is fine
  external: ['bufferutil', 'utf-8-validate'],
  plugins: [daemonsExternal],
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const manifest = {};
for (const [file, output] of Object.entries(result.metafile.outputs)) {
  manifest[path.relative(outdir, path.join(root, file))] = Object.keys(output.inputs).map((input) => path.relative(root, path.join(root, input)));
}
// written last: main.js compares the bundle's time with the compiles', and rankd.js is written before this
writeFileSync(path.join(outdir, 'manifest.json'), JSON.stringify(manifest, null, 1) + '\n');
const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
process.stdout.write(`bundle-cli: ${Object.keys(manifest).length} files, ${(bytes / 1024).toFixed(0)} KiB in ${path.relative(root, outdir)}\n`);
