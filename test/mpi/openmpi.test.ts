// `rankd run --mpi openmpi` on one host: Open MPI's mpirun, run by the agent, starts its
// daemon through rankd; every rank is a rankd rank (pinned, binding checked, output in its
// own log) and all of them are one MPI_COMM_WORLD.
import t from 'tap';
import { localCluster, processAlive } from '../helpers/cluster.js';
import { runCli } from '../helpers/daemons.js';
import { readHistory } from '../cluster/harness/history.js';
import { MPI4PY_ALLREDUCE, PYTHON, openMpiUnsupported, type MpiJobView } from './helpers.js';

const skip = openMpiUnsupported();
// Open MPI's processes of the job, by the pids its history recorded
function ompiPids(dataDir: string, jobId: string): number[] {
  return readHistory(dataDir)
    .events.filter(
      (e) =>
        e.subject === jobId &&
        (e.kind === 'ompi.launcher' || e.kind === 'ompi.daemon') &&
        typeof e.data['pid'] === 'number',
    )
    .map((e) => e.data['pid'] as number);
}

t.test(
  '--mpi openmpi -n 2: one world of 2, each rank on its planned CPU, verified',
  { skip: skip ?? false },
  async (t) => {
    const { env, controller } = await localCluster(t, ['solo']);
    const r = await runCli(['run', '--mpi', 'openmpi', '-n', '2', '-q', '--', PYTHON, MPI4PY_ALLREDUCE], env, 60_000);
    t.equal(r.code, 0, `rankd run exits 0 (stderr: ${r.stderr.slice(-3000)})`);
    const out = r.stdout.trim().split('\n').sort();
    t.equal(out.length, 2, 'one line per rank');
    const jobs = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
    const job = (await controller.api<MpiJobView>(`/v1/jobs/${jobs.body.jobs[0]!.id}`)).body;
    t.equal(job.state, 'succeeded', job.reason);
    t.equal(job.exitCode, 0);
    for (const rank of job.ranks) {
      const line = out.find((l) => l.startsWith(`${rank.rank}: `));
      t.ok(line, `rank ${rank.rank} has its labelled line`);
      t.match(
        line,
        new RegExp(
          `^${rank.rank}: rank=${rank.rank} size=2 sum=3 cpus=${rank.planned.cpus.join(',')} rankd_rank=${rank.rank} `,
        ),
        `rank ${rank.rank}: MPI rank ${rank.rank} of a world of 2, on its planned CPUs`,
      );
      t.match(
        r.stderr,
        new RegExp(`^${rank.rank}: rank ${rank.rank} stderr line$`, 'm'),
        `rank ${rank.rank}: its stderr is its own`,
      );
      t.equal(rank.state, 'exited');
      t.equal(rank.exitCode, 0);
      t.ok(rank.actual?.verified, `rank ${rank.rank}: binding verified by the agent`);
      t.same(rank.actual?.cpus, rank.planned.cpus, `rank ${rank.rank}: actual CPUs are the planned ones`);
      t.notOk(rank.pid !== null && processAlive(rank.pid), `rank ${rank.rank} is gone`);
    }
    const pids = ompiPids(controller.dataDir, job.id);
    t.ok(pids.length >= 1, `mpirun's pid is recorded (${pids.join(',')})`);
    t.same(pids.filter(processAlive), [], 'no mpirun or orted of the job remains');
  },
);

t.test(
  '--mpi openmpi: a rank exiting 3 ends the job with 3, and everything is gone',
  { skip: skip ?? false },
  async (t) => {
    const { env, controller } = await localCluster(t, ['solo']);
    const r = await runCli(
      ['run', '--mpi', 'openmpi', '-n', '2', '-q', '--grace', '2', '--', PYTHON, MPI4PY_ALLREDUCE, 'fail=1:3'],
      env,
      60_000,
    );
    t.equal(r.code, 3, `the job's exit code is the failing rank's (stderr: ${r.stderr.slice(-3000)})`);
    const jobs = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
    const job = (await controller.api<MpiJobView>(`/v1/jobs/${jobs.body.jobs[0]!.id}`)).body;
    t.equal(job.state, 'failed');
    t.equal(job.exitCode, 3);
    t.match(job.reason, /rank 1 on solo exited with code 3/);
    t.equal(job.ranks[1]!.exitCode, 3);
    for (const rank of job.ranks) t.notOk(rank.pid !== null && processAlive(rank.pid), `rank ${rank.rank} is gone`);
    const pids = ompiPids(controller.dataDir, job.id);
    t.ok(pids.length >= 1, 'mpirun and daemon pids are recorded');
    t.same(pids.filter(processAlive), [], 'no mpirun or orted of the job remains');
  },
);
