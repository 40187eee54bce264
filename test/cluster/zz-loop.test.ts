import t from 'tap';
import { buildMpich } from '../mpi/helpers.js';
import { startCluster } from './harness/cluster.js';
const OVER_TCP = ['--env', 'UCX_TLS=tcp,self'];
t.test('loop', { timeout: 900_000 }, async (t) => {
  const bin = buildMpich(t, ['allreduce']);
  const c = await startCluster(t, { hosts: 3 });
  for (let i = 0; i < 40; i++) {
    const s = Date.now();
    const run = await c.rankd(['run', '-q', '-N', '3', '--ranks-per-node', '2', '--timeout', '30', ...OVER_TCP, '--', bin.allreduce!], 60_000);
    const [summary] = await c.jobs();
    const job = await c.job(summary!.id);
    console.error(`iter ${i} code=${run.code} ${Date.now() - s}ms state=${job.state} ${job.reason}`);
    if (run.code !== 0) { console.error(run.stdout.slice(-3000), run.stderr.slice(-3000)); console.error(JSON.stringify(job.ranks.map((r: any) => [r.rank, r.state, r.exitCode, r.signal]))); t.fail("hung"); break; }
  }
});
