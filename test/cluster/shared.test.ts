// A cluster shared by jobs, across real network stacks: DDP jobs submitted together on 3
// hosts get disjoint cores on every host, and the one that does not fit waits for a free
// slot, then runs. These hosts have 2 cores each, so two 1-core-per-rank jobs fit at once
// and the third waits (on hosts with more cores, more would run side by side).
import t from 'tap';
import { startCluster } from './harness/cluster.js';
import { DDP_DEMO, PYTHON, parseDemo } from './harness/ddp-output.js';
import { lines } from './harness/labelled.js';
import { clusterTest } from './harness/requirements.js';

clusterTest(
  t,
  'three DDP jobs on 3 hosts: two run at once on disjoint cores, the third waits for a slot',
  { needsTorch: true, timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 3 });
    const runs = await Promise.all(
      ['ddp-a', 'ddp-b', 'ddp-c'].map((name) =>
        c.rankd(['run', '-N', '3', '-n', '3', '-c', '1', '--name', name, '--', PYTHON, DDP_DEMO], 240_000),
      ),
    );
    for (const run of runs)
      t.equal(run.code, 0, run.code === 0 ? 'rankd run exits 0' : `rankd run failed: ${run.stderr.slice(-1500)}`);
    const waited = runs.filter((r) => /queued: needs 3 nodes with 1 free core; 0 have room now/.test(r.stderr));
    t.equal(waited.length, 1, 'one of the three was told it waits, and why');
    t.match(waited[0]!.stderr, /started/, 'and then that it started');

    const events = c.events();
    const allocated = events.filter((e) => e.kind === 'job.allocated');
    const released = events.filter((e) => e.kind === 'job.released');
    t.equal(allocated.length, 3);
    const [first, second, third] = allocated;
    t.ok(second!.id < released[0]!.id, 'the first two jobs held their cores at the same time');
    t.ok(third!.id > released[0]!.id, 'the third got its cores only after one job released its own');

    const jobs = await Promise.all(allocated.map((e) => c.job(e.subject)));
    const cpusOn = (job: (typeof jobs)[number], host: string) =>
      job.rankMap.ranks.filter((r) => r.node === host).flatMap((r) => r.cpus);
    for (const host of ['host1', 'host2', 'host3']) {
      const a = cpusOn(jobs[0]!, host);
      const b = cpusOn(jobs[1]!, host);
      t.equal(a.length, 1, `${first!.subject} holds one core of ${host}`);
      t.same(
        a.filter((cpu) => b.includes(cpu)),
        [],
        `on ${host}, the concurrent jobs run on different cores (${a} and ${b})`,
      );
    }
    for (const job of jobs) {
      t.equal(job.state, 'succeeded', `${job.id} succeeded`);
      for (const r of job.ranks)
        t.same(r.actual?.cpus, job.rankMap.ranks[r.rank]!.cpus, `${job.id} rank ${r.rank}: bound where it was planned`);
      const digests = new Set(
        await Promise.all(
          job.ranks.map(async (r) => parseDemo(lines(await c.logs(job.id, r.rank, 'stdout'))).params?.digest),
        ),
      );
      t.equal(digests.size, 1, `${job.id}: all 3 ranks end with identical parameters`);
    }
    t.same(c.leftovers(), [], 'no process of the jobs remains in any namespace');
    c.checkHistory(t);
  },
);
