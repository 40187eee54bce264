#!/usr/bin/env node
// Builds the rank supervisor (native/*.c, docs/ranks.md) into dist/native/rank-supervisor
// at `npm install` (the root's prepare) and `npm run build`; deploy/install.sh copies dist
// with the rest of the agent. Plain `cc`, no node-gyp: it is a program, not an addon, and
// links nothing beyond libc.
//
// The agent starts every rank through this binary and has no other way to, so a build
// that cannot make it fails: without a C compiler it names the package to install for this
// distribution and exits 1, and so does a compile error. A compiler warning is printed and
// the build goes on (a newer compiler's new warning must not stop an install);
// test/ranks/native-build.test.ts builds with --werror so that CI still catches them.
//
//   node scripts/build-native.mjs [--out FILE] [--werror]     CC=… picks the compiler (default cc)
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const srcDir = path.join(pkg, 'native');
const outArg = process.argv.indexOf('--out');
const out = outArg > 0 ? path.resolve(process.argv[outArg + 1] ?? '') : path.join(pkg, 'dist/native/rank-supervisor');
const werror = process.argv.includes('--werror');
const cc = process.env.CC || 'cc';
const FLAGS = ['-std=gnu11', '-O2', '-Wall', '-Wextra', ...(werror ? ['-Werror'] : [])];

/** "rank-supervisor N", N from native/version.h: the one place the version is written. */
function expectedVersion() {
  const m = /^#define RS_VERSION (\d+)$/m.exec(fs.readFileSync(path.join(srcDir, 'version.h'), 'utf8'));
  if (!m) throw new Error(`${path.join(srcDir, 'version.h')} has no "#define RS_VERSION N" line`);
  return `rank-supervisor ${m[1]}`;
}
const EXPECTED_VERSION = expectedVersion();

const sources = fs
  .readdirSync(srcDir)
  .filter((f) => f.endsWith('.c'))
  .sort()
  .map((f) => path.join(srcDir, f));
const headers = fs
  .readdirSync(srcDir)
  .filter((f) => f.endsWith('.h'))
  .map((f) => path.join(srcDir, f));
const inputs = [...sources, ...headers, fileURLToPath(import.meta.url)];
const versionCopy = path.join(path.dirname(out), 'version.h');

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

/** How to install a C compiler here, from /etc/os-release; a generic sentence where the distribution is unknown. */
function compilerInstallHint(osRelease = readOsRelease()) {
  const ids = `${osRelease.ID ?? ''} ${osRelease.ID_LIKE ?? ''}`.split(/\s+/).filter(Boolean);
  const known = [
    [['debian', 'ubuntu'], 'apt-get install gcc (or build-essential)'],
    [['fedora', 'rhel', 'centos', 'rocky', 'almalinux'], 'dnf install gcc'],
    [['suse', 'opensuse', 'sles'], 'zypper install gcc'],
    [['alpine'], 'apk add gcc musl-dev'],
    [['arch'], 'pacman -S gcc'],
  ];
  const hit = known.find(([names]) => names.some((n) => ids.includes(n)));
  if (hit) return `install a C compiler: ${hit[1]}`;
  return "install a C compiler (gcc or clang, with the C library's headers), or name one in CC";
}

function readOsRelease() {
  const fields = {};
  try {
    for (const line of fs.readFileSync('/etc/os-release', 'utf8').split('\n')) {
      const m = /^([A-Z_]+)=("?)(.*)\2$/.exec(line.trim());
      if (m) fields[m[1]] = m[3];
    }
  } catch {
    // no os-release: the generic hint
  }
  return fields;
}

function failBuild(lines) {
  const head = 'rankd: ERROR: the rank supervisor was not built, and the agent cannot start ranks without it:';
  console.error([head, ...lines].join('\n'));
  process.exit(1);
}

const built = mtime(out);
if (built > 0 && inputs.every((f) => mtime(f) <= built) && mtime(versionCopy) >= built && works(out)) {
  console.log(`rankd: the rank supervisor is up to date: ${path.relative(process.cwd(), out) || out}`);
  process.exit(0);
}

fs.mkdirSync(path.dirname(out), { recursive: true });
// built beside the target and renamed into place: a running supervisor keeps its old
// binary (overwriting it in place would fail with ETXTBSY), a new one gets the new binary
const tmp = `${out}.${process.pid}.tmp`;
const compile = spawnSync(cc, [...FLAGS, '-o', tmp, ...sources], {
  stdio: ['ignore', 'inherit', 'pipe'],
  timeout: 120_000,
  encoding: 'utf8',
});
const warnings = compile.stderr?.trim() ?? '';
if (compile.error || compile.status !== 0) {
  fs.rmSync(tmp, { force: true });
  // a binary of older sources would answer an older version: the agent refuses it anyway
  fs.rmSync(out, { force: true });
  const e = /** @type {NodeJS.ErrnoException | undefined} */ (compile.error);
  if (e?.code === 'ENOENT') {
    const hint = `rankd: ${compilerInstallHint()}, then run \`npm run build\` again.`;
    failBuild([`${cc}: not found (no C compiler)`, hint]);
  }
  const why = e ? e.message : warnings || `${cc} exited ${compile.status ?? compile.signal}`;
  const fix = `rankd: ${cc} failed on packages/agent/native; set CC to another compiler, or report it.`;
  failBuild([why.split('\n').slice(0, 40).join('\n'), fix]);
}
if (!works(tmp)) {
  fs.rmSync(tmp, { force: true });
  fs.rmSync(out, { force: true });
  failBuild([`${tmp} --version did not answer "${EXPECTED_VERSION}"`]);
}
fs.renameSync(tmp, out);
// the agent of an installed copy (dist only) reads the version it expects from this copy
fs.copyFileSync(path.join(srcDir, 'version.h'), versionCopy);
if (warnings) console.warn(`rankd: WARNING: ${cc} warned on the rank supervisor (it was built):\n${warnings}`);
console.log(`rankd: built the rank supervisor: ${path.relative(process.cwd(), out) || out}`);
