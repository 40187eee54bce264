// The launcher every rank of a sweep runs (packages/agent/checks/allreduce-check.sh, from the
// agent's dist/checks/ as the controller names it), run for real with MPICH: two launchers
// that build at once leave one whole binary in the cache and nothing else; the next one finds
// it; a node without MPICH's mpicc gets an error that names the packages. Without PMI the
// benchmark runs as a singleton of size 1, which is all these need.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ALLREDUCE_LAUNCHER } from '#controller/checks/allreduce-job';
import { parseSweepOutput } from '#controller/checks/allreduce-output';
import { which } from '../cluster/harness/commands.js';
import { mpichMissing } from '../mpi/helpers.js';

const ARGS = ['--min-bytes', '8', '--max-bytes', '64', '--iterations', '2'];

function launch(env: NodeJS.ProcessEnv, args = ARGS): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', [ALLREDUCE_LAUNCHER, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-allreduce-launcher-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const mpich = mpichMissing();
const ncclTests = which('all_reduce_perf') ? 'nccl-tests is installed here: the launcher would run it' : null;

t.test(
  'two launchers build at once: one whole binary, found by the next',
  { skip: mpich ?? ncclTests ?? false },
  async (t) => {
    const home = scratch(t);
    const env = { PATH: process.env['PATH'], HOME: home, UCX_TLS: 'self' };
    const [a, b] = await Promise.all([launch(env), launch(env)]);
    for (const run of [a, b]) {
      t.equal(run.code, 0, `exit 0 (stderr: ${run.stderr})`);
      const out = parseSweepOutput(run.stdout);
      t.equal(out.implementation, 'rankd-mpi');
      t.equal(out.worldSize, 1, 'no PMI: a singleton');
      t.same(
        out.rows.map((r) => [r.bytes, r.wrong]),
        [
          [8, 0],
          [16, 0],
          [32, 0],
          [64, 0],
        ],
      );
      t.ok(out.complete);
    }
    t.ok(/ built node=/.test(a.stdout) || / built node=/.test(b.stdout), 'one of them built it');
    const cache = join(home, '.cache/rankd/allreduce');
    const keys = readdirSync(cache);
    t.equal(keys.length, 1, 'one cache entry');
    t.match(keys[0], /^[0-9a-f]{16}-[0-9a-f]{16}$/, "keyed by the source's and the compiler's hashes");
    t.same(readdirSync(join(cache, keys[0]!)), ['rankd-allreduce'], 'one binary, no half-built file left');

    const again = await launch(env);
    t.equal(again.code, 0);
    t.match(again.stdout, / cached node=/, 'the next launcher uses the cached binary');
  },
);

t.test('a node without MPICH: the error names the packages', async (t) => {
  // a PATH with what the launcher needs before it looks for a compiler, and no mpicc
  const bin = scratch(t);
  symlinkSync('/usr/bin/uname', join(bin, 'uname'));
  const run = await launch({ PATH: bin, HOME: bin });
  t.equal(run.code, 3);
  t.equal(run.stdout, '', 'nothing ran');
  t.match(
    run.stderr,
    new RegExp(
      "^rankd: RANKD_ALLREDUCE_NO_MPICC: \\S+ has neither nccl-tests' all_reduce_perf nor MPICH's mpicc " +
        '.*apt-get install mpich libmpich-dev',
    ),
  );
});

t.test('the launcher takes numbers only', async (t) => {
  const run = await launch({ PATH: process.env['PATH'] }, [
    '--min-bytes',
    '8;reboot',
    '--max-bytes',
    '64',
    '--iterations',
    '2',
  ]);
  t.equal(run.code, 3);
  t.match(run.stderr, /RANKD_CHECK_SIZES_INVALID: --min-bytes takes a whole number, not "8;reboot"/);
});
