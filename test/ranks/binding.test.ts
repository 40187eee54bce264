// Pinning through numactl and through taskset, read back from the rank's own /proc entry.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import t from 'tap';
import { judgeBinding, verifyBinding, detectPinningTool, pinnedArgv } from '@rankd/agent/ranks/index';
import { allowedCpus, hasTool, launch, readSpoolFile, runner, until } from './helpers.js';

const cpus = allowedCpus();
const memNode = Number(
  fs.readFileSync('/proc/self/status', 'utf8').match(/^Mems_allowed_list:\s*(\d+)/m)![1],
);

for (const tool of ['numactl', 'taskset'] as const) {
  t.test(`ranks pinned to CPU ${cpus[0]} and CPU ${cpus[1]} with ${tool}`, { skip: cpus.length < 2 ? 'needs 2 allowed CPUs' : !hasTool(tool) ? `${tool} is not installed` : false }, async (t) => {
    const r = runner(t, { pinning: tool });
    const jobId = `bind-${tool}`;
    const argv = ['sh', '-c', 'grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status; exec sleep 300'];
    const started = await Promise.all([0, 1].map((rank) => r.start(launch(jobId, rank, argv, { cpus: [cpus[rank]!], memNodes: [memNode] }))));
    for (const [rank, s] of started.entries()) {
      t.same(s.binding.cpus, [cpus[rank]], `rank ${rank} reads back CPU ${cpus[rank]}`);
      t.equal(s.binding.verified, true, `rank ${rank} binding verified`);
      t.notOk(s.binding.mismatch);
      t.match(s.execArgv[0], new RegExp(`/${tool}$`), `rank ${rank} runs under ${tool}`);
      t.same(s.execArgv.slice(-argv.length), argv, 'the program argv is passed unchanged');
      if (tool === 'numactl') {
        t.match(s.binding.memPolicy, /^bind/, 'numactl set a bind memory policy');
        t.same(s.binding.memNodes, [memNode]);
        t.notOk(s.warnings.some((w) => w.includes('numactl')), 'no numactl warning');
      } else {
        t.ok(s.warnings.some((w) => /numactl is not installed: CPU affinity only/.test(w)), 'the job is warned that memory is not bound');
        t.notMatch(s.binding.memPolicy ?? 'default', /^bind/, 'no memory policy without numactl');
      }
      // the program's own view agrees with what the runner read
      await until(() => readSpoolFile(r, jobId, rank, 'stdout').includes('Mems_allowed_list'), `rank ${rank} output`);
      t.match(readSpoolFile(r, jobId, rank, 'stdout'), new RegExp(`^Cpus_allowed_list:\\s*${cpus[rank]}$`, 'm'));
    }
  });
}

t.test('pinnedArgv', async (t) => {
  t.same(pinnedArgv({ kind: 'numactl', path: '/usr/bin/numactl' }, [0, 1, 2, 5], [0], ['python3', '-u']).argv, [
    '/usr/bin/numactl', '--physcpubind=0-2,5', '--membind=0', '--', 'python3', '-u',
  ]);
  t.same(pinnedArgv({ kind: 'taskset', path: '/usr/bin/taskset' }, [3], [], ['a']).argv, ['/usr/bin/taskset', '-c', '3', 'a']);
  t.same(pinnedArgv({ kind: 'numactl', path: '/n' }, [], [], ['a']).argv, ['a'], 'nothing planned, no wrapper');
  t.same(pinnedArgv({ kind: 'numactl', path: '/n' }, [1], [], ['a']).argv, ['/n', '--physcpubind=1', '--', 'a'], 'no memory binding without planned nodes');
  t.throws(() => pinnedArgv(null, [0], [], ['a']), { code: 'RANKD_RANK_NO_PINNING_TOOL' });
  const auto = detectPinningTool('auto');
  t.equal(auto?.kind, hasTool('numactl') ? 'numactl' : hasTool('taskset') ? 'taskset' : undefined, 'auto prefers numactl');
});

t.test('a binding that differs from the plan is a mismatch, with the reason', { skip: cpus.length < 2 ? 'needs 2 allowed CPUs' : !hasTool('taskset') ? 'taskset is not installed' : false }, async (t) => {
  const child = spawn('taskset', ['-c', String(cpus[0]), 'sleep', '300'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  await until(() => fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').startsWith('sleep'), 'taskset to exec sleep');
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
});

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
  const b = await verifyBinding(child.pid!, { cpus: [0], memNodes: [], memBound: false }, { wrapperCmdlines: [['sleep', '300']], timeoutMs: 100 });
  t.equal(b.unread, 'timeout');
  t.equal(b.verified, false);
  t.notOk(b.mismatch);
});
