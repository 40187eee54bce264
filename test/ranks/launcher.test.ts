// Which launcher the rank runner uses: the native one by default, pinning ranks itself
// with no wrapper in their exec chain; supervisor.pl with numactl or taskset when the
// binary is absent or RANKD_LAUNCHER=perl asks for it, saying why; and the build script,
// which never fails an install.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { defaultNativePath, describeLauncher, detectLauncher } from '@rankd/agent/ranks/index';
import { launcherCheck, numactlCheck } from '@rankd/controller/fleet/doctor/node-checks';
import { allowedCpus, hasTool, launch, readSpoolFile, runner, tmpSpool } from './helpers.js';

// in CI a launcher that was not built is a failure of the build, never a skip
const skip = fs.existsSync(defaultNativePath()) || process.env.CI === 'true' ? false : 'the native launcher is not built (npm run build)';
const cpus = allowedCpus();
const memNode = Number(/^Mems_allowed_list:\s*(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))![1]);

t.test('by default ranks start under the native launcher, pinned by it, with no wrapper', { skip }, async (t) => {
  const r = runner(t);
  t.equal(r.launcher.kind, 'native');
  t.notOk(r.launcher.fallback);
  t.match(describeLauncher(r.launcher), /^native rank launcher \/.*\/rank-supervisor \(pins CPUs and memory itself\)$/);
  const argv = ['sh', '-c', 'grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status; exec sleep 300'];
  const s = await r.start(launch('native', 0, argv, { cpus: [cpus.at(-1)!], memNodes: [memNode] }));
  t.same(s.execArgv, argv, 'the program is exec\'d directly: no numactl, taskset or setsid');
  t.same(s.binding.cpus, [cpus.at(-1)]);
  t.equal(s.binding.verified, true);
  if (fs.existsSync('/proc/self/numa_maps')) t.equal(s.binding.memPolicy, `bind:${memNode}`, 'set_mempolicy(MPOL_BIND) read back from numa_maps');
  t.same(s.warnings.filter((w) => /numactl/.test(w)), [], 'no numactl warning: memory is bound without it');
  const cmdline = fs.readFileSync(`/proc/${s.supervisorPid}/cmdline`, 'utf8').split('\0');
  t.match(cmdline.slice(0, 6), [/\/rank-supervisor$/, 'run', '--cpus', String(cpus.at(-1)), '--mems', String(memNode)], 'the supervisor got the plan as options');
  const launchJson = JSON.parse(readSpoolFile(r, 'native', 0, 'launch.json')) as { execArgv: string[] };
  t.same(launchJson.execArgv, argv, 'launch.json records what was exec\'d');
  const [exit] = await r.abortJob('native', 1000);
  t.match(exit, { outcome: 'signaled', signal: 'SIGTERM' });
});

t.test('a plan the kernel refuses fails the start with RANKD_RANK_PINNING and leaves nothing', { skip }, async (t) => {
  const r = runner(t);
  // a CPU this machine does not have (validateLaunch allows ids up to 2^20)
  const l = launch('refused', 0, ['true'], { cpus: [1 << 20] });
  await t.rejects(r.start(l), { code: 'RANKD_RANK_PINNING', message: /sched_setaffinity to CPUs 1048576: Invalid argument/ });
  t.notOk(fs.existsSync(r.spool.rankDir('refused', 0)), 'no spool directory left');
});

t.test('an explicit numactl or taskset preference still puts that wrapper behind the native supervisor', { skip: skip || (!hasTool('taskset') && 'taskset is not installed') }, async (t) => {
  const r = runner(t, { pinning: 'taskset' });
  t.equal(r.launcher.kind, 'native');
  const s = await r.start(launch('wrapped', 0, ['sleep', '300'], { cpus: [cpus[0]!] }));
  t.match(s.execArgv, [/\/taskset$/, '-c', String(cpus[0]), 'sleep', '300']);
  t.equal(s.binding.verified, true);
});

t.test('without the binary the runner falls back to supervisor.pl with numactl or taskset, and says why', async (t) => {
  const missing = path.join(tmpSpool(t), 'rank-supervisor');
  const r = runner(t, { launcher: { nativePath: missing } });
  t.equal(r.launcher.kind, 'perl');
  t.match(r.launcher.fallback, `the native launcher is not built (${missing} is missing`);
  t.match(describeLauncher(r.launcher), /^perl supervisor \/.*\/supervisor\.pl with numactl or taskset: the native launcher is not built/);
  const tool = hasTool('numactl') ? 'numactl' : 'taskset';
  const s = await r.start(launch('fallback', 0, ['sh', '-c', 'exit 137'], { cpus: [cpus[0]!], memNodes: [memNode] }));
  t.match(s.execArgv[0], new RegExp(`/${tool}$`), `the rank runs under ${tool}`);
  t.match(fs.readFileSync(path.join(r.spool.rankDir('fallback', 0), 'rank.json'), 'utf8'), /"pty":false/);
  t.match(await r.exited('fallback', 0), { outcome: 'exited', code: 137, signal: null });
  await r.start(launch('fallback', 1, ['sh', '-c', 'kill -KILL $$']));
  t.match(await r.exited('fallback', 1), { outcome: 'signaled', code: null, signal: 'SIGKILL' });
});

t.test('RANKD_LAUNCHER picks the launcher: perl on request, native or nothing, and no guessing', async (t) => {
  const saved = process.env.RANKD_LAUNCHER;
  t.teardown(() => (saved === undefined ? delete process.env.RANKD_LAUNCHER : (process.env.RANKD_LAUNCHER = saved)));
  process.env.RANKD_LAUNCHER = 'perl';
  const r = runner(t);
  t.equal(r.launcher.kind, 'perl');
  t.equal(r.launcher.fallback, 'RANKD_LAUNCHER=perl asks for the perl supervisor');
  await r.start(launch('forced', 0, ['sh', '-c', 'echo $0; exit 4']));
  t.match(await r.exited('forced', 0), { outcome: 'exited', code: 4 });
  t.equal(readSpoolFile(r, 'forced', 0, 'stdout'), 'sh\n');
  process.env.RANKD_LAUNCHER = 'native';
  t.throws(() => detectLauncher({ nativePath: '/nonexistent/rank-supervisor' }), { code: 'RANKD_RANK_SPAWN_FAILED', message: /the native launcher is required \(RANKD_LAUNCHER=native\) but/ });
  process.env.RANKD_LAUNCHER = 'numactl';
  t.throws(() => detectLauncher(), { code: 'RANKD_RANK_SPAWN_FAILED', message: 'RANKD_LAUNCHER=numactl: expected one of auto, native, perl' });
});

t.test('a binary that does not answer --version as expected is not used', async (t) => {
  const fake = path.join(tmpSpool(t), 'rank-supervisor');
  fs.writeFileSync(fake, '#!/bin/sh\necho something else\n', { mode: 0o755 });
  const l = detectLauncher({ preference: 'auto', nativePath: fake });
  t.equal(l.kind, 'perl');
  t.match(l.fallback, /--version answered "something else", not "rank-supervisor 3"/);
});

t.test('the doctor reports the launcher: PASS for native, WARN with a fix for perl', async (t) => {
  const report = { type: 'doctor.report' as const, id: 'd', agentTime: 0, numactl: null, paths: [] };
  t.match(launcherCheck('n1', { ...report, launcher: { kind: 'native', path: '/opt/rankd/rank-supervisor', fallback: null } }), { status: 'PASS', check: 'launcher', message: /native rank launcher \/opt\/rankd\/rank-supervisor/, fix: null });
  t.match(launcherCheck('n1', { ...report, launcher: { kind: 'perl', path: '/x/supervisor.pl', fallback: 'the native launcher is not built' } }), {
    status: 'WARN',
    message: /perl supervisor \/x\/supervisor\.pl with numactl or taskset .*: the native launcher is not built/,
    fix: /apt-get install gcc/,
  });
  t.equal(launcherCheck('n1', report), null, 'an older agent says nothing, and no check is made up');
  t.match(numactlCheck('n1', { ...report, launcher: { kind: 'native', path: '/b', fallback: null } }), { status: 'PASS', message: /not needed/ });
  t.match(numactlCheck('n1', report), { status: 'WARN' });
});

const buildScript = fileURLToPath(new URL('../../packages/agent/scripts/build-native.mjs', import.meta.url));

t.test('the build never fails an install: without a compiler it says so and exits 0', async (t) => {
  const out = path.join(tmpSpool(t), 'native', 'rank-supervisor');
  const r = spawnSync(process.execPath, [buildScript, '--out', out], { env: { ...process.env, CC: '/nonexistent/cc' }, encoding: 'utf8' });
  t.equal(r.status, 0);
  t.match(r.stderr, /the native rank launcher was not built:\n\/nonexistent\/cc: not found \(no C compiler\)\n.*supervisor\.pl and numactl/);
  t.notOk(fs.existsSync(out), 'no binary');
});

t.test('the build makes a working binary where a compiler is', { skip: hasTool('cc') ? false : 'no cc here' }, async (t) => {
  const out = path.join(tmpSpool(t), 'native', 'rank-supervisor');
  const r = spawnSync(process.execPath, [buildScript, '--out', out], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /built the native rank launcher/);
  t.equal(spawnSync(out, ['--version'], { encoding: 'utf8' }).stdout, 'rank-supervisor 3\n');
  t.equal(detectLauncher({ preference: 'auto', nativePath: out }).kind, 'native');
});
