// Gang restarts under load: 50 kill/restart cycles across 10 concurrent jobs, each rank
// SIGKILLed by its pid as `rankd`'s view reports it. Restarts within a minute of each
// other back off (0, 1, 2, 4, 8 s), so the cycles are spread over concurrent jobs rather
// than spent by one. Afterwards no process remains on any host, every attempt's spool is
// released, and the history checker sees each attempt allocated and released exactly once,
// in order, never two attempts of one job live together.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { startCluster, type Cluster } from './harness/cluster.js';
import { clusterTest } from './harness/requirements.js';
import { jobJson, restartingWorkload, type RestartingJobView } from './harness/restarts.js';
import { waitFor } from './harness/wait.js';

const JOBS = 10;
const RESTARTS = 5;
const CYCLES = JOBS * RESTARTS;
/** Attempts 0…RESTARTS-1 run until killed; the last exits 0. */
const UNTIL_KILLED: Record<number, string> = Object.fromEntries(
  Array.from({ length: RESTARTS }, (_, k) => [k, 'sleep 600']),
);

interface Kill {
  jobId: string;
  attempt: number;
  rank: number;
  node: string;
  pid: number;
}

clusterTest(
  t,
  `${CYCLES} kill/restart cycles over ${JOBS} concurrent jobs: no orphan, a sound history`,
  { timeout: 600_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 3 });
    const clis = Array.from({ length: JOBS }, (_, i) =>
      c.spawnRankd([
        'run',
        '-q',
        '-N',
        '2',
        '--ranks-per-node',
        '1',
        // --share: the ten jobs overlap on the three hosts instead of queueing behind each other
        '--share',
        '--max-restarts',
        String(RESTARTS),
        '--grace',
        '2',
        '--name',
        `load-${i}`,
        '--',
        ...restartingWorkload(UNTIL_KILLED),
      ]),
    );
    const ids = await waitFor(`the ${JOBS} jobs to be submitted`, 120_000, async () => {
      const jobs = await c.jobs();
      return jobs.length === JOBS ? jobs.map((j) => j.id) : undefined;
    });

    const kills = await killEachAttempt(c, ids);
    t.equal(kills.length, CYCLES, `${CYCLES} ranks SIGKILLed, one per failed attempt`);

    for (const [i, cli] of clis.entries()) {
      const exit = await cli.exited;
      t.equal(exit.code, 0, `rankd run of load-${i} exits with its last attempt's code (${cli.stderr().slice(-500)})`);
    }
    for (const id of ids) {
      const view = await jobJson(c, id);
      t.equal(view.state, 'succeeded', `${id}: succeeded on its last attempt (${view.reason})`);
      t.same(
        view.attempts.map((a) => [a.attempt, a.state]),
        [...Array.from({ length: RESTARTS }, (_, k) => [k, 'failed']), [RESTARTS, 'succeeded']],
        `${id}: ${RESTARTS + 1} attempts, each recorded once`,
      );
      const mine = kills.filter((k) => k.jobId === id);
      t.same(
        view.attempts.slice(0, RESTARTS).map((a) => [a.firstFailure?.rank, a.firstFailure?.signal]),
        mine.map((k) => [k.rank, 'SIGKILL']),
        `${id}: each failed attempt's first failure is the rank that was killed`,
      );
      t.same(view.excluded, [], `${id}: a SIGKILL leaves no node out`);
      const counted = (kind: string) =>
        c
          .events()
          .filter((e) => e.kind === kind && e.subject === id)
          .map((e) => e.data['attempt']);
      const all = Array.from({ length: RESTARTS + 1 }, (_, k) => k);
      t.same(counted('job.allocated'), all, `${id}: every attempt allocated once, in order`);
      t.same(counted('job.released'), all, `${id}: every attempt released once, in order`);
    }

    t.same(c.leftovers(), [], 'no process of any attempt remains on any host');
    for (const a of c.agents) {
      await waitFor(`${a.name} to release every attempt's spool`, 60_000, () => spoolOf(a.spoolDir).length === 0);
    }
    t.pass('every host released every attempt from its spool');
    c.checkHistory(t);
  },
);

/**
 * Until every job has ended: kills one rank of each attempt that may still restart, once
 * it runs with every rank started (the rank alternates with the attempt). Bounded in time
 * and in kills.
 */
async function killEachAttempt(c: Cluster, ids: string[]): Promise<Kill[]> {
  const kills: Kill[] = [];
  const done = new Set<string>();
  const killed = new Set<string>();
  const deadline = Date.now() + 480_000;
  while (done.size < ids.length) {
    if (Date.now() > deadline) throw new Error(`after 480 s, ${ids.length - done.size} jobs still run`);
    for (const id of ids) {
      if (done.has(id)) continue;
      const job = (await c.job(id)) as RestartingJobView;
      if (job.endedAt) done.add(id);
      const key = `${id}/${job.attempt}`;
      if (job.endedAt || job.attempt >= RESTARTS || killed.has(key) || job.state !== 'running') continue;
      const rank = job.ranks[job.attempt % job.ranks.length]!;
      if (rank.pid === null || !isRank(rank.pid)) continue;
      killed.add(key);
      if (kills.length >= CYCLES) throw new Error(`more than ${CYCLES} kills asked for: ${key}`);
      process.kill(rank.pid, 'SIGKILL');
      kills.push({ jobId: id, attempt: job.attempt, rank: rank.rank, node: rank.node, pid: rank.pid });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return kills;
}

/** The pid is still a rank of the workload (sh before its exec, sleep after), not a pid reused since. */
function isRank(pid: number): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv[0] === 'sleep' || (argv[0] === 'sh' && argv[1] === '-c');
  } catch {
    return false;
  }
}

/** What an agent's spool still holds (job folders by attempt id). */
function spoolOf(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}
