// A real distributed program across real network stacks: seed 002's DDP demo
// (nn.Linear(4, 5), 3 iterations) on gloo, 3 hosts × 2 ranks, launched by `rankd run`
// with nothing but the planner's environment to find each other.
import t from 'tap';
import { processAlive } from '../helpers/cluster.js';
import { startCluster } from './harness/cluster.js';
import { DDP_DEMO, PYTHON, parseDemo, type DemoRun } from './harness/ddp-output.js';
import { lines, splitLabelled } from './harness/labelled.js';
import { netnsId } from './harness/ns-process.js';
import { clusterTest } from './harness/requirements.js';

clusterTest(
  t,
  'seed 002 DDP demo on 3 hosts × 2 ranks: all ranks end with the same parameters',
  { needsTorch: true, timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 3 });
    const run = await c.rankd(
      ['run', '-q', '-N', '3', '--ranks-per-node', '2', '--name', 'ddp-demo', '--', PYTHON, DDP_DEMO],
      240_000,
    );
    t.equal(run.code, 0, `rankd run exits 0 (stderr: ${run.stderr.slice(-2000)})`);

    const [summary] = await c.jobs();
    const job = await c.job(summary!.id);
    t.equal(job.state, 'succeeded');
    t.equal(job.ranks.length, 6, 'world size 6');
    const host1 = c.agent('host1').host;
    t.equal(job.rankMap.masterAddr, host1.address, "MASTER_ADDR is rank 0's host address in its namespace");

    const out = splitLabelled(run.stdout);
    const err = splitLabelled(run.stderr);
    t.same(out.unlabelled, [], 'every stdout line carries its rank label');
    t.same(err.unlabelled, [], 'every stderr line carries its rank label (-q: nothing else is printed)');
    const runs: DemoRun[] = [];
    for (const r of job.ranks) {
      const host = c.agent(r.node).host;
      const entry = job.rankMap.ranks[r.rank]!;
      t.equal(r.state, 'exited');
      t.equal(r.exitCode, 0, `rank ${r.rank} exit code recorded`);
      const stored = lines(await c.logs(job.id, r.rank, 'stdout'));
      t.same(
        out.byRank.get(r.rank) ?? [],
        stored,
        `rank ${r.rank}: the labelled lines are its stored log, complete and in order`,
      );
      t.same(
        err.byRank.get(r.rank) ?? [],
        lines(await c.logs(job.id, r.rank, 'stderr')),
        `rank ${r.rank}: and so are its stderr lines`,
      );
      const demo = parseDemo(stored);
      t.same(demo.other, [], `rank ${r.rank}: no torn or foreign line`);
      t.same(
        demo.env,
        {
          RANK: String(r.rank),
          WORLD_SIZE: '6',
          LOCAL_RANK: String(entry.localRank),
          MASTER_ADDR: host1.address,
          MASTER_PORT: String(job.rankMap.masterPort),
          GLOO_SOCKET_IFNAME: 'eth0',
          netns: netnsId(host.netns),
        },
        `rank ${r.rank} ran in ${r.node}'s namespace with the planner's rendezvous`,
      );
      t.same(
        demo.iterations.map((x) => x.i),
        [0, 1, 2],
        `rank ${r.rank}: 3 iterations`,
      );
      t.equal(demo.done, 3);
      t.notOk(r.pid !== null && processAlive(r.pid), `rank ${r.rank} is gone`);
      runs.push(demo);
    }
    t.same(
      job.ranks.map((r) => r.node),
      ['host1', 'host1', 'host2', 'host2', 'host3', 'host3'],
      'two ranks on each host',
    );

    // The ranks started from different parameters and saw different data; only the
    // broadcast and the allreduces can make them agree.
    t.equal(new Set(runs.map((d) => d.init)).size, 6, 'each rank built its own initial parameters');
    const digests = new Set(runs.map((d) => d.params?.digest));
    t.equal(digests.size, 1, 'all 6 ranks end with bit-identical parameters');
    t.equal(runs[0]!.params?.values.length, 25, '4×5 weights and 5 biases');
    t.notOk(
      runs.some((d) => d.init === runs[0]!.params?.digest),
      'training moved the parameters',
    );
    for (let i = 0; i < 3; i++) {
      t.equal(
        new Set(runs.map((d) => d.iterations[i]!.grad)).size,
        1,
        `iteration ${i}: the allreduced gradient is the same on every rank`,
      );
      t.ok(new Set(runs.map((d) => d.iterations[i]!.loss)).size > 1, `iteration ${i}: the local losses differ`);
    }

    t.same(c.leftovers(), [], 'no process of the job remains in any namespace');
    c.checkHistory(t);
  },
);
