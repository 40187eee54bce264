// The simulated agents (bench/rankd/agent-sim.ts) answer a launch as a real agent does, so
// that the scale-launch figure times the controller's real path: each rank's rank.started
// (pid, start time, the planned binding verified), its output as a binary rank.output
// frame, and its rank.exit with the byte counts, all through the controller's schema
// validation. `true`, `false` and `echo` end on their own, SIM_EXIT_DELAY_MS after their
// start (at once by default).
import t from 'tap';
import { buildSysfs } from '../helpers/sysfs-fixture.js';
import type { MachineSpec } from '../helpers/sysfs-fixture.js';
import { startController, waitForNode } from '../helpers/daemons.js';
import { history } from './helpers.js';
import { startSimAgents } from './sim-agents.js';

const machine: MachineSpec = {
  packages: 2,
  coresPerPackage: 4,
  threadsPerCore: 2,
  numbering: 'split',
  cpu: { modelName: 'sim 2-socket HT' },
  host: { hostname: 'sim' },
};

interface RankLike {
  rank: number;
  node: string;
  state: string;
  pid: number | null;
  startedAt: string | null;
  exitCode: number | null;
  planned: { cpus: number[]; memNodes: number[] };
  actual: { cpus: number[]; memNodes: number[]; verified: boolean } | null;
  outputBytes: { stdout: number; stderr: number };
}
interface JobLike {
  id: string;
  state: string;
  reason: string;
  exitCode: number | null;
  startedAt: string | null;
  endedAt: string | null;
  ranks: RankLike[];
}

t.test('simulated agents start, report and end ranks through the real protocol', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const root = buildSysfs(t.testdir() + '/sim', machine);
  await startSimAgents(t, controller, root, 3, 'now');
  await startSimAgents(t, controller, root, 2, 'late', { SIM_EXIT_DELAY_MS: '400' });
  for (const name of ['now-0', 'now-1', 'now-2', 'late-0', 'late-1'])
    await waitForNode(controller, name, 'ready', 30_000);

  const run = async (group: string, command: string[]): Promise<JobLike> => {
    const submitted = await controller.api<JobLike>('/v1/jobs', {
      method: 'POST',
      body: { command, placement: { group, ranksPerNode: 4 } },
    });
    t.equal(submitted.status, 201, `${command.join(' ')} on ${group} submitted`);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { body } = await controller.api<JobLike>(`/v1/jobs/${submitted.body.id}`);
      if (!['queued', 'pending', 'starting', 'running'].includes(body.state)) return body;
      if (Date.now() > deadline) throw new Error(`job ${body.id} still ${body.state}: ${body.reason}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const ok = await run('now-*', ['true']);
  t.match(ok, { state: 'succeeded', exitCode: 0 }, '`true` succeeds');
  t.equal(ok.ranks.length, 12, '3 nodes × 4 ranks');
  for (const r of ok.ranks) {
    t.match(r, { state: 'exited', exitCode: 0, pid: Number }, `rank ${r.rank} exited 0 with a pid`);
    t.same(
      r.actual,
      { cpus: r.planned.cpus, memNodes: r.planned.memNodes, verified: true },
      `rank ${r.rank}: the binding reported is the plan, verified`,
    );
    t.ok(r.planned.cpus.length > 0, `rank ${r.rank} was planned on CPUs`);
  }
  const events = history(controller);
  t.equal(
    events.filter((e) => e.kind === 'rank.started' && e.subject.startsWith(`${ok.id}/`)).length,
    12,
    'every rank.started was accepted and recorded',
  );
  t.ok(
    events.some((e) => e.kind === 'job.state' && e.subject === ok.id && (e.data as { to: string }).to === 'running'),
    'the job was running once every rank had started',
  );

  const echoed = await run('now-*', ['echo', 'hello', 'from a sim']);
  t.match(echoed, { state: 'succeeded', exitCode: 0 }, '`echo` succeeds');
  for (const r of echoed.ranks)
    t.same(r.outputBytes, { stdout: 17, stderr: 0 }, `rank ${r.rank}: its output is stored, byte for byte counted`);
  const text = await controller.api<string>(`/v1/jobs/${echoed.id}/logs?rank=5&stream=stdout&format=text`);
  t.equal(text.body, 'hello from a sim\n', "rank 5's stdout is what echo wrote");

  const failed = await run('now-*', ['/bin/false']);
  t.match(failed, { state: 'failed', exitCode: 1 }, '`false` fails the job with its exit code');

  const late = await run('late-*', ['true']);
  t.match(late, { state: 'succeeded', exitCode: 0 }, '`true` with SIM_EXIT_DELAY_MS succeeds');
  const ran = Date.parse(late.endedAt!) - Date.parse(late.startedAt!);
  t.ok(ran >= 400, `the ranks ran for the delay: ${ran} ms from the job's start to its end`);
});
