// Fault 3: an agent is SIGKILLed mid-job, then restarted.
//
// Its ranks are not its children in any way that matters: each runs under a per-rank
// supervisor in its own session (KillMode=process), writes to files in the spool, and has
// its exit status written there by that supervisor. So they run on; one of them even ends
// while no agent exists. The new agent re-adopts both from the spool, streams the rest of
// their output from the offsets the controller holds, and reports both exits.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../helpers/cluster.js';
import { startCluster } from './harness/cluster.js';
import { splitLabelled } from './harness/labelled.js';
import { clusterTest } from './harness/requirements.js';
import { waitFor } from './harness/wait.js';
import { countingWorkload, expectedStderr, expectedStdout } from './harness/workloads.js';

const LINES = 600;
const GATE_AT = 300;

clusterTest(
  t,
  'an agent is SIGKILLed mid-job and restarted: its ranks live on, are adopted, and their exits reported',
  { timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 3 });
    const gate = join(c.runDir, 'gate');
    mkdirSync(gate);
    const open = (rank: number) => writeFileSync(join(gate, String(rank)), '');
    const workload = countingWorkload({
      lines: LINES,
      gate: { dir: gate, at: GATE_AT },
      exitCodes: { 2: 3 },
      pauseEvery: 50,
      pauseS: 0.05,
    });
    // "wait": rank 2's failure must not end the others; each exit is to be seen on its own
    const cli = c.spawnRankd([
      'run',
      '-q',
      '-N',
      '3',
      '--ranks-per-node',
      '2',
      '--fail-policy',
      'wait',
      '--name',
      'agent-restart',
      '--',
      ...workload,
    ]);
    const id = await waitFor('the job to be submitted', 60_000, async () => (await c.jobs())[0]?.id);
    const atGate = await waitFor('every rank to reach the gate', 120_000, async () => {
      const job = await c.job(id);
      return job.ranks.every((r) => r.outputBytes.stdout === expectedStdout(r.rank, GATE_AT).length) ? job : undefined;
    });
    const victims = atGate.ranks.filter((r) => r.node === 'host2');
    t.same(
      victims.map((r) => r.rank),
      [2, 3],
      'host2 runs ranks 2 and 3',
    );
    const spool = c.agent('host2').spoolDir;
    const supervisors = victims.map(
      (r) =>
        (JSON.parse(readFileSync(join(spool, id, String(r.rank), 'rank.json'), 'utf8')) as { supervisorPid: number })
          .supervisorPid,
    );

    const killed = await c.killAgent('host2', 'SIGKILL');
    t.equal(killed.signal, 'SIGKILL', 'the agent died of SIGKILL');
    for (const [i, r] of victims.entries()) {
      t.ok(processAlive(r.pid!), `rank ${r.rank} runs on without its agent`);
      t.ok(processAlive(supervisors[i]!), `rank ${r.rank}'s supervisor runs on`);
    }

    // rank 2 finishes (exit 3) while no agent exists: only its supervisor sees it end
    open(2);
    await waitFor('rank 2 to end with no agent', 60_000, () => !processAlive(victims[0]!.pid!));
    // the supervisor writes exit.json once the rank's group is empty and its output complete
    const exitFile = join(spool, id, '2', 'exit.json');
    await waitFor("rank 2's supervisor to record its exit", 30_000, () => existsSync(exitFile));
    const recorded = JSON.parse(readFileSync(exitFile, 'utf8')) as { code: number | null; signal: number | null };
    t.match(
      recorded,
      { code: 3, signal: null },
      "rank 2's exit status was recorded by its supervisor, which outlived the agent",
    );
    t.ok(processAlive(victims[1]!.pid!), 'rank 3 still runs');

    const agent = await c.restartAgent('host2');
    await c.waitForNode('host2', 'ready', 60_000);
    await waitFor('the new agent to adopt the ranks', 30_000, () =>
      /adopted ranks from the spool/.test(agent.output()),
    );
    t.match(
      agent.output(),
      /"ranks":2.*adopted ranks from the spool/,
      'the new agent adopted both ranks from its spool',
    );
    for (const rank of [0, 1, 3, 4, 5]) open(rank);

    const job = await c.waitForJobEnd(id, 180_000);
    t.equal(job.state, 'failed');
    t.equal(job.exitCode, 3, "the job's code is rank 2's");
    t.equal(job.reason, 'rank 2 on host2 exited with code 3');
    const cliExit = await cli.exited;
    t.equal(cliExit.code, 3, 'rankd run exits with it');
    const streamed = splitLabelled(cli.stdout());
    for (const r of job.ranks) {
      t.match(
        r,
        { state: 'exited', exitCode: r.rank === 2 ? 3 : 0, signal: null },
        `rank ${r.rank}: its exit is recorded`,
      );
      t.ok(
        (await c.logs(id, r.rank, 'stdout')) === expectedStdout(r.rank, LINES),
        `rank ${r.rank}: every stdout line stored once and in order`,
      );
      t.ok(
        (await c.logs(id, r.rank, 'stderr')) === expectedStderr(r.rank, LINES),
        `rank ${r.rank}: every stderr line stored once and in order`,
      );
      t.ok(
        (streamed.byRank.get(r.rank) ?? []).join('\n') + '\n' === expectedStdout(r.rank, LINES),
        `rank ${r.rank}: rankd run printed every line once`,
      );
    }

    for (const pid of [...victims.map((r) => r.pid!), ...supervisors]) t.notOk(processAlive(pid), `pid ${pid} is gone`);
    t.same(c.leftovers(), [], 'no process of the job remains in any namespace');
    for (const a of c.agents)
      await waitFor(`${a.name} to release the job's spool`, 30_000, () => !existsSync(join(a.spoolDir, id)));
    t.pass('every host released the job from its spool');
    c.checkHistory(t);
  },
);
