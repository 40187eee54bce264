// Builds the dashboard into dist/: one hashed JS bundle, one hashed stylesheet, index.html
// naming them, and .gz/.br beside each for the controller to serve precompressed.
// Run at npm install (the root prepare script); nothing is fetched at run time.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const here = import.meta.dirname;
const dist = join(here, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'src/main.tsx') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir: dist,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
const html = readFileSync(join(here, 'src/index.html'), 'utf8').replace('%APP_JS%', js).replace('%APP_CSS%', css);
writeFileSync(join(dist, 'index.html'), html);

for (const file of [js, css, 'index.html']) {
  const body = readFileSync(join(dist, file));
  writeFileSync(join(dist, `${file}.gz`), gzipSync(body, { level: 9 }));
  writeFileSync(
    join(dist, `${file}.br`),
    brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
  );
}
