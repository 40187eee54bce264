// Fault 4: a storm of bad input against the controller while a job runs: about 10,000
// malformed, mistyped, unknown, oversize and unauthorised messages at its REST API, its
// WebSocket upgrade and its agent gateway, bounded to a minute. No crash, memory that
// stays flat, a clear error for each message, and a job that never notices.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCluster } from './harness/cluster.js';
import { clusterTest } from './harness/requirements.js';
import { storm } from './harness/storm.js';
import { waitFor } from './harness/wait.js';
import { countingWorkload, expectedStderr, expectedStdout } from './harness/workloads.js';

const MESSAGES = 10_000;
const BUDGET_MS = 60_000;
/**
 * Growth allowed between the storm's middle and its end (about 5,000 messages): a leak of
 * 13 KiB a message fails it, smaller ones hide in the garbage collector's noise (±20 MiB).
 */
const RSS_GROWTH_LIMIT_MB = 64;
const LINES = 400;
const GATE_AT = 200;

function rssMb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kb) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) / 1024;
}

clusterTest(
  t,
  'a storm of bad input: no crash, flat memory, a clear error for each, the job unaffected',
  { timeout: 300_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 3 });
    const gate = join(c.runDir, 'gate');
    mkdirSync(gate);
    // the job prints half its lines, waits at the gate through the storm, then prints the rest
    const cli = c.spawnRankd([
      'run',
      '-q',
      '-N',
      '3',
      '--ranks-per-node',
      '2',
      '--name',
      'under-storm',
      '--',
      ...countingWorkload({ lines: LINES, gate: { dir: gate, at: GATE_AT } }),
    ]);
    const id = await waitFor('the job to be submitted', 60_000, async () => (await c.jobs())[0]?.id);
    await waitFor('every rank to reach the gate', 120_000, async () =>
      (await c.job(id)).ranks.every((r) => r.outputBytes.stdout === expectedStdout(r.rank, GATE_AT).length),
    );
    const controllerPid = c.controller.pid;
    const firstEvent = c.events().length;
    const rssBefore = rssMb(controllerPid);
    let rssHalf = 0;

    const result = await storm({
      api: c.api,
      identity: (() => {
        const ids = new Map<string, Promise<{ cert: string; key: string }>>();
        return (name: string) => {
          let id = ids.get(name);
          if (!id) ids.set(name, (id = c.api.enroll(name, c.joinToken)));
          return id;
        };
      })(),
      jobId: id,
      messages: MESSAGES,
      budgetMs: BUDGET_MS,
      onHalf: () => (rssHalf = rssMb(controllerPid)),
    });
    const rssAfter = rssMb(controllerPid);
    t.comment(
      `storm: ${result.sent} messages${result.cutShort ? ' (cut short by the time budget)' : ''}; controller RSS ${rssBefore.toFixed(1)} → ${rssHalf.toFixed(1)} → ${rssAfter.toFixed(1)} MiB`,
    );
    for (const [category, tally] of Object.entries(result.byCategory))
      t.comment(`  ${category}: ${tally.clear}/${tally.sent} clear`);

    t.ok(result.sent >= MESSAGES / 2, `a real storm: ${result.sent} messages`);
    for (const [category, tally] of Object.entries(result.byCategory)) {
      t.equal(
        tally.clear,
        tally.sent,
        `${category}: a clear error for each of ${tally.sent}${tally.unclear.length ? ` (got: ${tally.unclear.join(' | ')})` : ''}`,
      );
    }
    t.ok(c.controller.running(), 'the controller is still running');
    t.equal(c.controller.pid, controllerPid, 'the same controller process: it never restarted');
    t.ok(
      rssAfter - rssHalf < RSS_GROWTH_LIMIT_MB,
      `controller memory stays flat through the second half (${rssHalf.toFixed(1)} → ${rssAfter.toFixed(1)} MiB)`,
    );

    const nodes = await c.nodes();
    for (const name of ['host1', 'host2', 'host3'])
      t.match(
        nodes.find((n) => n.name === name),
        { state: 'ready', connected: true },
        `${name} stayed connected`,
      );
    const stormEvents = c.events().slice(firstEvent);
    t.same(
      stormEvents.filter((e) => e.kind === 'node.state' && /^host/.test(e.subject) && e.data['to'] === 'lost'),
      [],
      'no real node was declared lost',
    );
    t.same(
      stormEvents.filter((e) => e.subject.startsWith(`${id}`)).map((e) => e.kind),
      [],
      'the storm wrote nothing into the job',
    );

    for (let rank = 0; rank < 6; rank++) writeFileSync(join(gate, String(rank)), '');
    const job = await c.waitForJobEnd(id, 120_000);
    t.equal(job.state, 'succeeded', `the job ran on untouched (${job.reason})`);
    t.equal((await cli.exited).code, 0, 'rankd run exits 0');
    for (const r of job.ranks) {
      t.ok(
        (await c.logs(id, r.rank, 'stdout')) === expectedStdout(r.rank, LINES),
        `rank ${r.rank}: every stdout line stored once and in order`,
      );
      t.ok((await c.logs(id, r.rank, 'stderr')) === expectedStderr(r.rank, LINES), `rank ${r.rank}: every stderr line`);
    }
    t.same(c.leftovers(), [], 'no process of the job remains in any namespace');
    c.checkHistory(t);
  },
);
