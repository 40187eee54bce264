// scripts/build-native.mjs, which `npm install` and `npm run build` run: without a C
// compiler it fails, naming the package to install; a compiler that only warns still
// builds (with the warning shown); and the sources build clean with -Werror, so that a
// new warning fails CI rather than an install.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { expectedSupervisorVersion, findSupervisor } from '#agent/ranks/supervisor-binary';
import { hasTool, tmpSpool } from './helpers.js';

const buildScript = fileURLToPath(new URL('../../packages/agent/scripts/build-native.mjs', import.meta.url));
// in CI the compiler is part of the image: its absence is a failure, never a skip
const noCc = hasTool('cc') || process.env.CI === 'true' ? false : 'no cc here';

function build(out: string, args: string[] = [], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [buildScript, '--out', out, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
}

t.test('without a C compiler the build fails, naming the package to install, and leaves no binary', async (t) => {
  const out = path.join(tmpSpool(t), 'native', 'rank-supervisor');
  const r = build(out, [], { CC: '/nonexistent/cc' });
  t.equal(r.status, 1, 'exit 1: npm install and npm run build fail');
  t.match(
    r.stderr,
    /^rankd: ERROR: the rank supervisor was not built, and the agent cannot start ranks without it:\n\/nonexistent\/cc: not found \(no C compiler\)\nrankd: install a C compiler/,
  );
  const debian = fs.existsSync('/etc/debian_version');
  if (debian)
    t.match(
      r.stderr,
      /install a C compiler: apt-get install gcc \(or build-essential\), then run `npm run build` again/,
      'the Debian package',
    );
  t.notOk(fs.existsSync(out), 'no binary');
});

t.test("a compile error fails the build with the compiler's words", { skip: noCc }, async (t) => {
  const dir = tmpSpool(t);
  const cc = path.join(dir, 'cc');
  fs.writeFileSync(cc, '#!/bin/sh\necho "native/args.c:1:1: error: something broke" >&2\nexit 1\n', { mode: 0o755 });
  const out = path.join(dir, 'native', 'rank-supervisor');
  const r = build(out, [], { CC: cc });
  t.equal(r.status, 1);
  t.match(r.stderr, /the rank supervisor was not built.*\nnative\/args\.c:1:1: error: something broke\n/);
  t.notOk(fs.existsSync(out), 'no binary');
});

t.test('a compiler that only warns builds the supervisor and shows the warning', { skip: noCc }, async (t) => {
  const dir = tmpSpool(t);
  // the real compiler, with a warning of the kind a newer compiler adds
  const cc = path.join(dir, 'cc');
  fs.writeFileSync(
    cc,
    '#!/bin/sh\necho "native/args.c:9:9: warning: a new kind of warning [-Wnew]" >&2\nexec cc "$@"\n',
    { mode: 0o755 },
  );
  const out = path.join(dir, 'native', 'rank-supervisor');
  const r = build(out, [], { CC: cc });
  t.equal(r.status, 0, r.stderr);
  t.match(
    r.stderr,
    /rankd: WARNING: .* warned on the rank supervisor \(it was built\):\nnative\/args\.c:9:9: warning: a new kind of warning/,
  );
  t.match(r.stdout, /built the rank supervisor/);
  t.equal(
    spawnSync(out, ['--version'], { encoding: 'utf8' }).stdout,
    `rank-supervisor ${expectedSupervisorVersion()}\n`,
  );
  t.equal(
    fs.readFileSync(path.join(dir, 'native', 'version.h'), 'utf8'),
    fs.readFileSync(fileURLToPath(new URL('../../packages/agent/native/version.h', import.meta.url)), 'utf8'),
    'the version header travels beside the binary',
  );
  t.same(findSupervisor(out), { path: out, version: expectedSupervisorVersion(), problem: null });
});

t.test('the sources build without a single warning under -Werror (CI catches new ones)', { skip: noCc }, async (t) => {
  const out = path.join(tmpSpool(t), 'native', 'rank-supervisor');
  const r = build(out, ['--werror']);
  t.equal(r.status, 0, r.stderr);
  t.notMatch(r.stderr, /warn/i, 'no warning');
  t.equal(
    spawnSync(out, ['--version'], { encoding: 'utf8' }).stdout,
    `rank-supervisor ${expectedSupervisorVersion()}\n`,
  );
});
