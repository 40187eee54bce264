// The agent's one launcher, the rank supervisor: ranks start under it by default, pinned by
// it with no wrapper in their exec chain; an agent without a working binary (not built,
// of other sources) refuses every start with an error naming the fix and leaves nothing;
// and `rankd doctor` shows its version, or fails the node saying why.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { defaultSupervisorPath, describeSupervisor, findSupervisor } from '#agent/ranks/index';
import { expectedSupervisorVersion } from '#agent/ranks/supervisor-binary';
import { launcherReport } from '#agent/fleet/doctor-inspect';
import { launcherCheck, numactlCheck } from '#controller/fleet/doctor/node-checks';
import { allowedCpus, launch, readSpoolFile, runner, tmpSpool } from './helpers.js';

// in CI a supervisor that was not built is a failure of the build, never a skip
const skip =
  fs.existsSync(defaultSupervisorPath()) || process.env.CI === 'true'
    ? false
    : 'the rank supervisor is not built (npm run build)';
const cpus = allowedCpus();
const memNode = Number(/^Mems_allowed_list:\s*(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))![1]);

t.test('ranks start under the rank supervisor, pinned by it, with no wrapper', { skip }, async (t) => {
  const r = runner(t);
  t.same(r.supervisor, { path: defaultSupervisorPath(), version: expectedSupervisorVersion(), problem: null });
  t.match(
    describeSupervisor(r.supervisor),
    /^rank supervisor \d+ at \/.*\/rank-supervisor \(pins CPUs and memory itself\)$/,
  );
  const argv = ['sh', '-c', 'grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status; exec sleep 300'];
  const s = await r.start(launch('native', 0, argv, { cpus: [cpus.at(-1)!], memNodes: [memNode] }));
  t.same(s.execArgv, argv, "the program is exec'd directly: no numactl, taskset or setsid");
  t.same(s.binding.cpus, [cpus.at(-1)]);
  t.equal(s.binding.verified, true);
  if (fs.existsSync('/proc/self/numa_maps'))
    t.equal(s.binding.memPolicy, `bind:${memNode}`, 'set_mempolicy(MPOL_BIND) read back from numa_maps');
  t.same(
    s.warnings.filter((w) => /numactl/.test(w)),
    [],
    'no numactl warning: memory is bound without it',
  );
  const cmdline = fs.readFileSync(`/proc/${s.supervisorPid}/cmdline`, 'utf8').split('\0');
  t.match(
    cmdline.slice(0, 6),
    [/\/rank-supervisor$/, 'run', '--cpus', String(cpus.at(-1)), '--mems', String(memNode)],
    'the supervisor got the plan as options',
  );
  const launchJson = JSON.parse(readSpoolFile(r, 'native', 0, 'launch.json')) as { execArgv: string[] };
  t.same(launchJson.execArgv, argv, "launch.json records what was exec'd");
  const [exit] = await r.abortJob('native', 1000);
  t.match(exit, { outcome: 'signaled', signal: 'SIGTERM' });
});

t.test('a plan the kernel refuses fails the start with RANKD_RANK_PINNING and leaves nothing', { skip }, async (t) => {
  const r = runner(t);
  // a CPU this machine does not have (validateLaunch allows ids up to 2^20)
  const l = launch('refused', 0, ['true'], { cpus: [1 << 20] });
  await t.rejects(r.start(l), {
    code: 'RANKD_RANK_PINNING',
    message: /sched_setaffinity to CPUs 1048576: Invalid argument/,
  });
  t.notOk(fs.existsSync(r.spool.rankDir('refused', 0)), 'no spool directory left');
});

t.test('without the binary the agent refuses every start, naming the fix, and nothing happens', async (t) => {
  const missing = path.join(tmpSpool(t), 'rank-supervisor');
  const r = runner(t, { supervisorPath: missing });
  t.same(r.supervisor, {
    path: missing,
    version: null,
    problem: `the rank supervisor is not built (${missing} is missing; the build said why)`,
  });
  t.match(describeSupervisor(r.supervisor), /^no usable rank supervisor, ranks will be refused: .*apt-get install gcc/);
  const marker = path.join(tmpSpool(t), 'ran');
  for (const extra of [{}, { pty: true }]) {
    await t.rejects(r.start(launch('refused', 0, ['touch', marker], extra)), {
      code: 'RANKD_RANK_SPAWN_FAILED',
      message: new RegExp(
        `^this node cannot start ranks: the rank supervisor is not built \\(${missing} is missing; .*\\); install a C compiler \\(Debian: apt-get install gcc\\) and run \`npm run build\``,
      ),
    });
  }
  t.notOk(fs.existsSync(marker), 'the program never ran');
  t.same(
    fs.readdirSync(r.spool.root).filter((f) => !f.startsWith('.')),
    [],
    'no job directory in the spool',
  );
  t.same(r.list(), [], 'no rank is tracked');
});

t.test('a binary that does not answer --version as these sources expect is refused', async (t) => {
  const dir = tmpSpool(t);
  const other = path.join(dir, 'other-version');
  fs.writeFileSync(other, '#!/bin/sh\necho rank-supervisor 1\n', { mode: 0o755 });
  t.same(findSupervisor(other), {
    path: other,
    version: '1',
    problem: `${other} --version answered "rank-supervisor 1", not "rank-supervisor ${expectedSupervisorVersion()}" (a build of other sources)`,
  });
  const broken = path.join(dir, 'broken');
  fs.writeFileSync(broken, '#!/nonexistent/interpreter\n', { mode: 0o755 });
  t.match(findSupervisor(broken), { version: null, problem: new RegExp(`^${broken} does not run here: `) });
  const plain = path.join(dir, 'plain');
  fs.writeFileSync(plain, '', { mode: 0o644 });
  t.match(findSupervisor(plain), { version: null, problem: `${plain} is not executable` });
});

t.test("the doctor reports the supervisor's version, or fails the node with the fix", async (t) => {
  const report = { type: 'doctor.report' as const, id: 'd', agentTime: 0, numactl: null, paths: [] };
  const good = launcherReport({ path: '/opt/rankd/rank-supervisor', version: '4', problem: null });
  t.same(good, { path: '/opt/rankd/rank-supervisor', version: '4', problem: null }, 'what the agent sends');
  t.match(launcherCheck('n1', { ...report, launcher: good }), {
    status: 'PASS',
    check: 'launcher',
    message: 'rank supervisor 4 at /opt/rankd/rank-supervisor: it pins ranks itself',
    fix: null,
  });
  const missing = {
    path: '/x/rank-supervisor',
    version: null,
    problem: 'the rank supervisor is not built (/x/rank-supervisor is missing; the build said why)',
  };
  t.match(launcherCheck('n1', { ...report, launcher: missing }), {
    status: 'FAIL',
    message: 'ranks cannot start: the rank supervisor is not built (/x/rank-supervisor is missing; the build said why)',
    fix: /apt-get install gcc.*npm run build/,
  });
  t.equal(launcherCheck('n1', report), null, 'an older agent says nothing, and no check is made up');
  t.match(numactlCheck('n1', { ...report, launcher: good }), {
    status: 'PASS',
    message: /not needed: the rank supervisor binds ranks itself/,
  });
  t.match(numactlCheck('n1', report), { status: 'WARN' });
});
