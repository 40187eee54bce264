// The dashboard takes its answer types from the route table (@rankd/protocol/routes) as types
// only, and its few constants and formatters (the ended job states, link speeds) from
// protocol's TypeBox-free modules: neither the table nor TypeBox may reach its bundle, which
// every browser downloads.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import t from 'tap';

const ROOT = join(import.meta.dirname, '../..');
// esbuild is the dashboard's devDependency, as in its build (packages/dashboard/build.mjs)
const { build } = createRequire(join(ROOT, 'packages/dashboard/package.json'))('esbuild') as typeof import('esbuild');

t.test("the dashboard's bundle holds no TypeBox and no TypeBox-built protocol module", async (t) => {
  const result = await build({
    entryPoints: [join(ROOT, 'packages/dashboard/src/main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    write: false,
    outdir: t.testdir(),
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  t.same(
    inputs.filter((p) => p.includes('node_modules/typebox')),
    [],
    'no TypeBox',
  );
  const protocol = inputs.filter((p) => p.includes('protocol/dist/'));
  const names = protocol.map((p) => p.replace(/^.*protocol\/dist\//, ''));
  t.same(
    names.sort(),
    ['bit-rate.js', 'job-list.js'],
    "protocol's bit-rate (the Network page's figures, as the CLI prints them) and job-list (the ended states)",
  );
});
