// Bundles what `rankd agent` runs (packages/agent/dist/daemon.js, after `tsc -b`) into one
// ESM file, packages/agent/dist/bundle/daemon.js: the agent with the protocol schemas,
// TypeBox, ws and pino. Compiled, that graph is some 800 modules (TypeBox alone ~680),
// and an agent keeps every module's record and source string for as long as it runs;
// bundled and tree-shaken, it is one. load-daemon.ts loads it (RANKD_DEV=1 alone loads
// the compiled modules instead).
//
// Not minified: stack traces in the agent's log keep their names and lines.
// The bundle sits one level under dist/, as dist/ranks/ and dist/openmpi/ do, so that the
// files the agent finds relative to its own module (../native/rank-supervisor, and the
// version header: ../../native/version.h in a checkout, ../native/version.h installed)
// resolve the same.
// Native addons stay outside: node-pty (loaded only for --pty ranks and sessions) and
// ws's optional bufferutil/utf-8-validate.
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build, nodeEsm, root } from './lib/node-bundle.mjs';

const agent = path.join(root, 'packages/agent');
const outdir = path.join(agent, 'dist/bundle');

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  ...nodeEsm,
  entryPoints: { daemon: path.join(agent, 'dist/daemon.js') },
  outdir,
  external: ['node-pty', 'bufferutil', 'utf-8-validate'],
});

const inputs = Object.values(result.metafile.outputs).flatMap((o) => Object.keys(o.inputs));
// what test/agent/rest-modules.test.ts reads to tell which sources the bundle holds
writeFileSync(path.join(outdir, 'manifest.json'), JSON.stringify({ 'daemon.js': inputs }, null, 1) + '\n');
const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
process.stdout.write(
  `bundle-agent: ${inputs.length} modules, ${(bytes / 1024).toFixed(0)} KiB in ${path.relative(root, outdir)}\n`,
);
