// Open MPI across real network stacks: `rankd run --mpi openmpi`, 3 hosts × 2 ranks of an
// mpi4py allreduce. mpirun runs in host1's namespace (rank 0's node), its orteds are started
// by the agents of host2 and host3 through rankd, and the ranks talk over TCP on eth0 only
// (no shared memory across namespaces: btl self,tcp and pml ob1).
import t from 'tap';
import { processAlive } from '../helpers/cluster.js';
import { startCluster } from './harness/cluster.js';
import { readHistory } from './harness/history.js';
import { lines, splitLabelled } from './harness/labelled.js';
import { netnsId } from './harness/ns-process.js';
import { clusterTest } from './harness/requirements.js';
import { MPI4PY_ALLREDUCE, PYTHON, openMpiUnsupported } from '../mpi/helpers.js';

const TCP_ONLY = [
  'OMPI_MCA_btl=self,tcp',
  'OMPI_MCA_pml=ob1',
  'OMPI_MCA_btl_tcp_if_include=eth0',
  'OMPI_MCA_oob_tcp_if_include=eth0',
].flatMap((e) => ['--env', e]);

function ompiPids(dataDir: string, jobId: string): Array<{ kind: string; node: string; pid: number }> {
  return readHistory(dataDir)
    .events.filter(
      (e) =>
        e.subject === jobId &&
        (e.kind === 'ompi.launcher' || e.kind === 'ompi.daemon') &&
        e.data['state'] === 'started',
    )
    .map((e) => ({ kind: e.kind, node: String(e.data['node'] ?? e.data['host']), pid: e.data['pid'] as number }));
}

const skip = openMpiUnsupported();
if (skip) t.test('Open MPI on 3 hosts', { skip: `Open MPI test skipped: ${skip}` }, async () => {});
else
  clusterTest(
    t,
    '--mpi openmpi on 3 hosts × 2 ranks: one world of 6 over TCP, each rank pinned and verified; a failing rank ends it all',
    { timeout: 300_000 },
    async (t) => {
      const c = await startCluster(t, { hosts: 3 });
      const run = await c.rankd(
        [
          'run',
          '-q',
          '--mpi',
          'openmpi',
          '-N',
          '3',
          '-n',
          '6',
          ...TCP_ONLY,
          '--name',
          'ompi-allreduce',
          '--',
          PYTHON,
          MPI4PY_ALLREDUCE,
        ],
        240_000,
      );
      t.equal(run.code, 0, `rankd run exits 0 (stderr: ${run.stderr.slice(-3000)})`);
      const [summary] = await c.jobs();
      const job = await c.job(summary!.id);
      t.equal(job.state, 'succeeded', job.reason);
      t.same(
        job.ranks.map((r) => r.node),
        ['host1', 'host1', 'host2', 'host2', 'host3', 'host3'],
        'two ranks on each host',
      );
      const out = splitLabelled(run.stdout);
      t.same(out.unlabelled, [], 'every stdout line carries its rank label');
      for (const r of job.ranks) {
        const host = c.agent(r.node).host;
        const stored = lines(await c.logs(job.id, r.rank, 'stdout'));
        t.same(out.byRank.get(r.rank) ?? [], stored, `rank ${r.rank}: the labelled lines are its stored log`);
        t.equal(stored.length, 1, `rank ${r.rank}: one line`);
        t.match(
          stored[0],
          new RegExp(
            `^rank=${r.rank} size=6 sum=21 cpus=${r.planned.cpus.join(',')} rankd_rank=${r.rank} pid=\\d+ netns=${netnsId(host.netns).replace(/[[\]]/g, '\\$&')}$`,
          ),
          `rank ${r.rank}: MPI rank ${r.rank} of one world of 6, allreduced, on its planned CPUs, in ${r.node}'s namespace`,
        );
        t.same(
          lines(await c.logs(job.id, r.rank, 'stderr')),
          [`rank ${r.rank} stderr line`],
          `rank ${r.rank}: its stderr is its own`,
        );
        t.equal(r.exitCode, 0);
        const actual = (r as typeof r & { actual: { cpus: number[]; verified: boolean } | null }).actual;
        t.ok(actual?.verified, `rank ${r.rank}: binding verified by the agent`);
        t.same(actual?.cpus, r.planned.cpus, `rank ${r.rank}: actual CPUs are the planned ones`);
        t.notOk(r.pid !== null && processAlive(r.pid), `rank ${r.rank} is gone`);
      }
      const procs = ompiPids(c.dataDir, job.id);
      t.same(
        procs.map((p) => `${p.kind} ${p.node}`).sort(),
        ['ompi.daemon host1', 'ompi.daemon host2', 'ompi.daemon host3', 'ompi.launcher host1'],
        "mpirun on host1, an orted started by each host's agent",
      );
      t.same(
        procs.filter((p) => processAlive(p.pid)),
        [],
        'no mpirun or orted remains',
      );
      t.same(c.leftovers(), [], 'no process of the job remains in any namespace');

      const failing = await c.rankd(
        [
          'run',
          '-q',
          '--mpi',
          'openmpi',
          '-N',
          '3',
          '-n',
          '6',
          '--grace',
          '2',
          ...TCP_ONLY,
          '--',
          PYTHON,
          MPI4PY_ALLREDUCE,
          'fail=3:3',
        ],
        240_000,
      );
      t.equal(failing.code, 3, `a rank exiting 3 makes the job exit 3 (stderr: ${failing.stderr.slice(-3000)})`);
      const failed = await c.job((await c.jobs()).find((j) => j.id !== job.id)!.id);
      t.equal(failed.state, 'failed');
      t.match(failed.reason, /rank 3 on host2 exited with code 3/);
      for (const r of failed.ranks) t.notOk(r.pid !== null && processAlive(r.pid), `rank ${r.rank} is gone`);
      const failedProcs = ompiPids(c.dataDir, failed.id);
      t.ok(failedProcs.length >= 2, 'mpirun and orted pids recorded');
      t.same(
        failedProcs.filter((p) => processAlive(p.pid)),
        [],
        'no mpirun or orted of the failed job remains',
      );
      t.same(c.leftovers(), [], 'no process of either job remains in any namespace');
      c.checkHistory(t);
    },
  );
