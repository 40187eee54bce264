#!/usr/bin/env node
// Builds the native rank supervisor (native/*.c, docs/ranks.md) into
// dist/native/rank-supervisor at `npm install` (the root's prepare) and `npm run build`;
// deploy/install.sh copies dist with the rest of the agent. Plain `cc`, no node-gyp: it
// is a program, not an addon, and links nothing beyond libc.
//
// It never fails the install. Without a C compiler (or when the build fails) it says so,
// removes any binary of older sources, and exits 0: the agent then starts ranks with
// supervisor.pl and numactl or taskset, as before, and says which launcher it uses in
// its startup log and in `rankd doctor`.
//
//   node scripts/build-native.mjs [--out FILE]     CC=… picks the compiler (default cc)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const srcDir = path.join(pkg, 'native');
const outArg = process.argv.indexOf('--out');
const out = outArg > 0 ? path.resolve(process.argv[outArg + 1] ?? '') : path.join(pkg, 'dist', 'native', 'rank-supervisor');
const cc = process.env.CC || 'cc';
const FLAGS = ['-std=gnu11', '-O2', '-Wall', '-Wextra', '-Werror'];
const EXPECTED_VERSION = 'rank-supervisor 3';

const sources = fs.readdirSync(srcDir).filter((f) => f.endsWith('.c')).sort().map((f) => path.join(srcDir, f));
const inputs = [...sources, ...fs.readdirSync(srcDir).filter((f) => f.endsWith('.h')).map((f) => path.join(srcDir, f)), fileURLToPath(import.meta.url)];

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

function works(binary) {
  try {
    return execFileSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim() === EXPECTED_VERSION;
  } catch {
    return false;
  }
}

// The perl fallback travels with the build: deploy/install.sh copies dist, not src, and an
// agent whose native launcher could not be built needs supervisor.pl (and --mpi openmpi
// its two scripts) there. A checkout keeps using src's copies (launcher.ts, ompi-files.ts).
if (outArg < 0) {
  for (const rel of ['ranks/supervisor.pl', 'openmpi/ompi-rank.pl', 'openmpi/rsh-helper.pl']) {
    fs.mkdirSync(path.dirname(path.join(pkg, 'dist', rel)), { recursive: true });
    fs.copyFileSync(path.join(pkg, 'src', rel), path.join(pkg, 'dist', rel));
  }
}

const built = mtime(out);
if (built > 0 && inputs.every((f) => mtime(f) <= built) && works(out)) {
  console.log(`rankd: the native rank launcher is up to date: ${path.relative(process.cwd(), out) || out}`);
  process.exit(0);
}

fs.mkdirSync(path.dirname(out), { recursive: true });
// built beside the target and renamed into place: a running supervisor keeps its old
// binary (overwriting it in place would fail with ETXTBSY), a new one gets the new binary
const tmp = `${out}.${process.pid}.tmp`;
try {
  execFileSync(cc, [...FLAGS, '-o', tmp, ...sources], { stdio: ['ignore', 'inherit', 'pipe'], timeout: 120_000 });
  if (!works(tmp)) throw new Error(`${tmp} --version did not answer "${EXPECTED_VERSION}"`);
  fs.renameSync(tmp, out);
  console.log(`rankd: built the native rank launcher: ${path.relative(process.cwd(), out) || out}`);
} catch (err) {
  fs.rmSync(tmp, { force: true });
  fs.rmSync(out, { force: true });
  const e = /** @type {NodeJS.ErrnoException & { stderr?: Buffer }} */ (err);
  const why = e.code === 'ENOENT' ? `${cc}: not found (no C compiler)` : (e.stderr?.toString().trim() || e.message).split('\n').slice(0, 20).join('\n');
  console.warn(
    [
      'rankd: WARNING: the native rank launcher was not built:',
      why,
      'rankd: the agent will start ranks with supervisor.pl and numactl (or taskset) instead;',
      'rankd: its startup log and `rankd doctor` say which launcher is in use.',
      'rankd: to build it, install a C compiler (Debian: apt-get install gcc) and run `npm run build`.',
    ].join('\n'),
  );
}
