// Gang restarts and MPICH: each attempt gets a fresh PMI namespace. Attempt 0 fails (rank 1
// exits 1 before MPI_Init, the other rank waits there and is ended); attempt 1 wires up
// through its own PMI-1 servers and fence under the attempt's id, <job>-1, and every rank
// sees the right world size and allreduces over it. UCX_TLS=tcp,self, as in mpi.test.ts.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildMpich, mpichMissing } from '../mpi/helpers.js';
import { startCluster } from './harness/cluster.js';
import { attemptIdOf } from './harness/history.js';
import { clusterTest } from './harness/requirements.js';
import { attemptLog, jobJson } from './harness/restarts.js';

const mpich = mpichMissing();

if (mpich) t.test('MPICH across gang restarts', { skip: mpich }, async () => {});
else {
  clusterTest(
    t,
    'MPICH hello: attempt 0 fails, attempt 1 reports the right world size from a fresh PMI namespace',
    { timeout: 240_000 },
    async (t) => {
      const bin = buildMpich(t, ['restart_hello']);
      const c = await startCluster(t, { hosts: 2 });
      // where rank 0 marks that it printed, for rank 1 to fail only after it (restart_hello.c)
      const sync = mkdtempSync(join(tmpdir(), 'rankd-restart-hello-'));
      chmodSync(sync, 0o777);
      t.teardown(() => rmSync(sync, { recursive: true, force: true }));
      // 2 ranks on this 2-core machine: MPICH over TCP can deadlock in MPI_Finalize when
      // ranks outnumber CPUs (mpi.test.ts), which would say nothing about restarts
      const run = await c.rankd(
        [
          'run',
          '-q',
          '-N',
          '2',
          '--ranks-per-node',
          '1',
          '--max-restarts',
          '1',
          '--grace',
          '3',
          '--timeout',
          '90',
          '--env',
          'UCX_TLS=tcp,self',
          '--env',
          `RESTART_HELLO_SYNC_DIR=${sync}`,
          '--',
          bin.restart_hello!,
        ],
        180_000,
      );
      const [summary] = await c.jobs();
      const id = summary!.id;
      const view = await jobJson(c, id);
      t.equal(view.state, 'succeeded', `the job succeeds on attempt 1 (${view.reason})`);
      t.equal(run.code, 0, `rankd run exits 0 (${run.stderr.slice(-1500)})`);
      t.equal(view.attempts.length, 2);
      t.match(view.attempts[0], { attempt: 0, state: 'failed', firstFailure: { rank: 1 } });
      t.match(view.attempts[1], { attempt: 1, state: 'succeeded', exitCode: 0 });

      for (const rank of [0, 1]) {
        t.match(
          attemptLog(c, id, 0, rank),
          new RegExp(`^attempt=0 kvsname=${id}\\n`),
          `attempt 0, rank ${rank}: its PMI namespace is the job's id`,
        );
        t.equal(
          attemptLog(c, id, 1, rank),
          `attempt=1 kvsname=${attemptIdOf(id, 1)}\nrank=${rank} size=2 sum=2\n`,
          `attempt 1, rank ${rank}: a fresh PMI namespace (${id}-1), a world of 2 from PMI, an allreduce over it`,
        );
      }
      t.match(attemptLog(c, id, 0, 1, 'stderr'), /rank 1 fails attempt 0/);
      t.same(c.leftovers(), [], 'no process of either attempt remains in any namespace');
      c.checkHistory(t);
    },
  );
}
