// Pinning by the rank supervisor (--cpus/--mems), read back from the rank's own /proc entry.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import t from 'tap';
import { judgeBinding, verifyBinding, pinning } from '#agent/ranks/index';
import { allowedCpus, hasTool, launch, readSpoolFile, runner, until } from './helpers.js';

const cpus = allowedCpus();
const memNode = Number(fs.readFileSync('/proc/self/status', 'utf8').match(/^Mems_allowed_list:\s*(\d+)/m)![1]);

t.test(
  `ranks pinned to CPU ${cpus[0]} and CPU ${cpus[1]} and bound to node ${memNode} by the supervisor`,
  { skip: cpus.length < 2 ? 'needs 2 allowed CPUs' : false },
  async (t) => {
    const r = runner(t);
    const jobId = 'bind';
    const argv = ['sh', '-c', 'grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status; exec sleep 300'];
    const started = await Promise.all(
      [0, 1].map((rank) => r.start(launch(jobId, rank, argv, { cpus: [cpus[rank]!], memNodes: [memNode] }))),
    );
    for (const [rank, s] of started.entries()) {
      t.same(s.binding.cpus, [cpus[rank]], `rank ${rank} reads back CPU ${cpus[rank]}`);
      t.equal(s.binding.verified, true, `rank ${rank} binding verified`);
      t.notOk(s.binding.mismatch);
      t.same(s.execArgv, argv, "the program is exec'd directly, its argv unchanged");
      if (fs.existsSync('/proc/self/numa_maps')) t.match(s.binding.memPolicy, /^bind/, 'a bind memory policy');
      t.same(s.binding.memNodes, [memNode]);
      t.same(
        s.warnings.filter((w) => /numactl|memory is not bound/.test(w)),
        [],
        'no pinning warning',
      );
      // the program's own view agrees with what the runner read
      await until(() => readSpoolFile(r, jobId, rank, 'stdout').includes('Mems_allowed_list'), `rank ${rank} output`);
      t.match(readSpoolFile(r, jobId, rank, 'stdout'), new RegExp(`^Cpus_allowed_list:\\s*${cpus[rank]}$`, 'm'));
    }
  },
);

t.test("pinning: the supervisor's options for a plan", async (t) => {
  t.same(pinning([0, 1, 2, 5], [0]), { options: ['--cpus', '0-2,5', '--mems', '0'], memBound: true });
  t.same(pinning([3], []), { options: ['--cpus', '3'], memBound: false }, 'no memory binding without planned nodes');
  t.same(pinning([], [1]), { options: ['--mems', '1'], memBound: true });
  t.same(pinning([], []), { options: [], memBound: false }, 'nothing planned, nothing asked');
});

t.test(
  'a binding that differs from the plan is a mismatch, with the reason',
  { skip: cpus.length < 2 ? 'needs 2 allowed CPUs' : !hasTool('taskset') ? 'taskset is not installed' : false },
  async (t) => {
    const child = spawn('taskset', ['-c', String(cpus[0]), 'sleep', '300'], { stdio: 'ignore' });
    t.teardown(() => child.kill('SIGKILL'));
    await until(
      () => fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').startsWith('sleep'),
      'taskset to exec sleep',
    );
    const b = judgeBinding(child.pid!, { cpus: [cpus[1]!], memNodes: [], memBound: false });
    t.equal(b.verified, false);
    t.same(b.cpus, [cpus[0]]);
    t.equal(b.mismatch, `CPUs ${cpus[0]} instead of ${cpus[1]}`);
    t.notOk(b.unread);
    if (fs.existsSync('/proc/self/numa_maps')) {
      const memb = judgeBinding(child.pid!, { cpus: [cpus[0]!], memNodes: [memNode], memBound: true });
      t.equal(memb.verified, false, 'a planned membind that is not in effect is a mismatch');
      t.match(memb.mismatch, /memory policy default instead of bind:/);
    }
  },
);

t.test('a rank that is gone before it can be read is reported as such, not as a mismatch', async (t) => {
  const child = spawn('true', [], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  const b = await verifyBinding(child.pid!, { cpus: [0], memNodes: [], memBound: false }, { wrapperCmdlines: [] });
  t.equal(b.verified, false);
  t.equal(b.unread, 'exited');
  t.notOk(b.mismatch);
});

t.test('the binding is not judged while the process is still one of its wrappers', async (t) => {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  await until(() => fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').startsWith('sleep'), 'sleep to start');
  const b = await verifyBinding(
    child.pid!,
    { cpus: [0], memNodes: [], memBound: false },
    { wrapperCmdlines: [['sleep', '300']], timeoutMs: 100 },
  );
  t.equal(b.unread, 'timeout');
  t.equal(b.verified, false);
  t.notOk(b.mismatch);
});
