// Real MPICH programs under `rankd run` on one host: the PMI-1 server makes N ranks one
// MPI_COMM_WORLD (not N singletons), MPI_Abort's code becomes the job's, and a rank that
// leaves before MPI_Finalize fails the job instead of hanging it.
import t from 'tap';
import { localCluster, processAlive } from '../helpers/cluster.js';
import { runCli } from '../helpers/daemons.js';
import { buildMpich, mpichMissing, type MpiJobView } from './helpers.js';

const skip = mpichMissing() ?? false;

async function jobOf(cluster: Awaited<ReturnType<typeof localCluster>>, stderr: string): Promise<MpiJobView> {
  const id = /^rankd: job (\S+)$/m.exec(stderr)?.[1];
  return (await cluster.controller.api<MpiJobView>(`/v1/jobs/${id}`)).body;
}

t.test('MPI_Allreduce over 2 ranks: one world of size 2, each rank pinned and verified', { skip }, async (t) => {
  const bin = buildMpich(t, ['allreduce']);
  const cluster = await localCluster(t, ['solo']);
  const r = await runCli(['run', '-n', '2', '--', bin.allreduce!], cluster.env);
  t.equal(r.code, 0, r.stderr);
  const job = await jobOf(cluster, r.stderr);
  t.equal(job.state, 'succeeded');
  t.same(
    r.stdout
      .trim()
      .split('\n')
      .map((l) => l.replace(/ host=.*/, ''))
      .sort(),
    job.ranks.map((rank) => `${rank.rank}: rank=${rank.rank} size=2 sum=2 cpus=${rank.planned.cpus.join(',')}`),
    'one world of 2, and after MPI_Init each rank is still on its planned CPU',
  );
  for (const rank of job.ranks) {
    t.ok(rank.actual?.verified, `rank ${rank.rank}: the binding check saw the planned binding`);
    t.same(rank.actual?.cpus, rank.planned.cpus);
  }

  // the same program without PMI: two singletons, which is what --mpi none is for
  const none = await runCli(['run', '-q', '-n', '2', '--mpi', 'none', '--', bin.allreduce!], cluster.env);
  t.equal(none.code, 0);
  t.same(
    none.stdout
      .trim()
      .split('\n')
      .map((l) => l.replace(/ cpus=.*/, ''))
      .sort(),
    ['0: rank=0 size=1 sum=1', '1: rank=0 size=1 sum=1'],
  );

  // under a terminal the ranks reach the server over PMI_PORT
  const pty = await runCli(['run', '-q', '-n', '2', '--pty', '--', bin.allreduce!], cluster.env);
  t.equal(pty.code, 0, pty.stderr);
  t.same(
    pty.stdout
      .replace(/\r/g, '')
      .trim()
      .split('\n')
      .map((l) => l.replace(/ cpus=.*/, ''))
      .sort(),
    ['0: rank=0 size=2 sum=2', '1: rank=1 size=2 sum=2'],
  );
});

t.test('MPI_Abort(…, 42) on one rank: the job exits 42 and no rank is left', { skip }, async (t) => {
  const bin = buildMpich(t, ['abort']);
  const cluster = await localCluster(t, ['solo']);
  const r = await runCli(['run', '-n', '2', '--grace', '20', '--', bin.abort!], cluster.env);
  t.equal(r.code, 42, r.stderr);
  t.match(r.stderr, /rank 1 called MPI_Abort \(PMI abort with exit code 42\)/);
  const job = await jobOf(cluster, r.stderr);
  t.equal(job.state, 'failed');
  t.equal(job.exitCode, 42);
  for (const rank of job.ranks) {
    t.not(rank.signal, 'SIGKILL', `rank ${rank.rank} ended within the grace period (no SIGKILL was needed)`);
    t.notOk(rank.pid !== null && processAlive(rank.pid), `rank ${rank.rank} (pid ${rank.pid}) is gone`);
  }
});

t.test('a rank that exits 0 before MPI_Finalize fails the job', { skip }, async (t) => {
  const bin = buildMpich(t, ['early_exit']);
  const cluster = await localCluster(t, ['solo']);
  const r = await runCli(['run', '-n', '2', '--grace', '20', '--', bin.early_exit!], cluster.env);
  t.equal(r.code, 1, 'exit code 1: the rank itself exited 0');
  t.match(r.stderr, /rank 1 closed its PMI connection without PMI finalize/);
  const job = await jobOf(cluster, r.stderr);
  t.equal(job.state, 'failed');
  for (const rank of job.ranks) t.notOk(rank.pid !== null && processAlive(rank.pid), `rank ${rank.rank} is gone`);
});
