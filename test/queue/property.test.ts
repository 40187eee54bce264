// The property of allocations, checked from the controller's event history alone: random
// jobs (sizes, --exclusive, GPUs) submitted at once to a mix of 2-socket hyperthreaded CPU
// nodes and 8-GPU nodes never hold one core or GPU twice at any moment, and every job
// either runs to its end or is refused at submit with a reason.
import t from 'tap';
import { buildSysfs } from '../helpers/sysfs-fixture.js';
import type { MachineSpec } from '../helpers/sysfs-fixture.js';
import { startController, waitForNode, waitUntil } from '../helpers/daemons.js';
import { history, overlaps, soloOn } from './helpers.js';
import { startSimAgents } from './sim-agents.js';
import { seededRandom } from '../../bench/shared/seeded-random.js';

const cpuNode: MachineSpec = {
  packages: 2,
  coresPerPackage: 4,
  threadsPerCore: 2,
  numbering: 'split',
  cpu: { modelName: 'sim 2-socket HT' },
  host: { hostname: 'cpu' },
};
const gpuNode: MachineSpec = {
  packages: 2,
  coresPerPackage: 8,
  threadsPerCore: 2,
  cpu: { modelName: 'sim 8-GPU' },
  host: { hostname: 'gpu' },
  gpus: Array.from({ length: 8 }, (_, i) => ({
    pci: `0000:${(0x10 + i * 0x10).toString(16)}:00.0`,
    numaNode: i < 4 ? 0 : 1,
    model: 'NVIDIA A100-SXM4-80GB',
  })),
};

t.test('random concurrent jobs on CPU and GPU nodes never share a core or GPU', async (t) => {
  const seed = Number(process.env['RANKD_PROPERTY_SEED'] ?? Date.now() % 100000);
  t.comment(`seed ${seed} (RANKD_PROPERTY_SEED replays it)`);
  const rnd = seededRandom(seed);
  const pick = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));

  const controller = await startController();
  t.teardown(() => controller.stop());
  await startSimAgents(t, controller, buildSysfs(t.testdir() + '/cpu', cpuNode), 3, 'cpu');
  await startSimAgents(t, controller, buildSysfs(t.testdir() + '/gpu', gpuNode), 2, 'gpu');
  for (const name of ['cpu-0', 'cpu-1', 'cpu-2', 'gpu-0', 'gpu-1'])
    await waitForNode(controller, name, 'ready', 30_000);
  const s = soloOn(controller);

  const specs = Array.from({ length: 40 }, () => {
    const gpu = rnd() < 0.4;
    const placement: Record<string, unknown> = gpu
      ? { group: 'gpu-*', ntasks: pick(1, 4), gpusPerRank: pick(1, 4), cpusPerRank: pick(1, 2) }
      : { group: 'cpu-*', ntasks: pick(1, 5), cpusPerRank: pick(1, rnd() < 0.1 ? 12 : 4) };
    if (rnd() < 0.15) placement['exclusive'] = true;
    return { placement, command: ['sleep', (0.2 + rnd()).toFixed(2)] };
  });
  const answers = await Promise.all(
    specs.map((spec) =>
      controller.api<{ id: string; state: string; message?: string; code?: string }>('/v1/jobs', {
        method: 'POST',
        body: spec,
      }),
    ),
  );
  const accepted = answers.filter((a) => a.status === 201).map((a) => a.body.id);
  const refused = answers.filter((a) => a.status !== 201);
  for (const r of refused)
    t.match(
      r,
      { status: 400, body: { code: /^RANKD_/, message: /\w/ } },
      `refused at submit with a reason: ${r.body.message}`,
    );
  t.ok(accepted.length >= 20, `${accepted.length} of 40 jobs accepted`);

  const ends = await waitUntil(
    'every accepted job to end',
    120_000,
    async () => {
      const views = await Promise.all(accepted.map((id) => s.job(id)));
      return views.every((v) => !['queued', 'pending', 'starting', 'running'].includes(v.state)) ? views : undefined;
    },
    250,
  );
  t.same(
    ends.filter((v) => v.state !== 'succeeded').map((v) => `${v.id} ${v.state}: ${v.reason}`),
    [],
    'every accepted job ran to its end',
  );

  const events = history(controller);
  t.same(overlaps(events), [], 'at no moment did two jobs hold one core or GPU');
  for (const id of accepted)
    t.equal(events.filter((e) => e.kind === 'job.allocated' && e.subject === id).length, 1, `${id} was allocated once`);
  t.ok(
    events.some((e) => e.kind === 'job.queued'),
    'some jobs had to wait: the property was under pressure',
  );
  t.ok(
    events.some(
      (e) =>
        e.kind === 'job.allocated' &&
        Object.values((e.data as { nodes: Record<string, { gpus: number[] }> }).nodes).some((n) => n.gpus.length > 0),
    ),
    'GPUs were allocated',
  );
});
