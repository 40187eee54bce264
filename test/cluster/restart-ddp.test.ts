// Issue 27's DDP test: a training run on 3 of 4 namespace hosts under
// `rankd run --max-restarts 2`, one of its ranks SIGKILLed mid-training. Fail-fast ends
// attempt 0, the controller starts attempt 1 under the same job id, and the resume demo
// (packages/cli/demo/ddp_resume.py) loads rank 0's checkpoint: the final parameters are
// bit-identical on every rank and equal to those of a run that was never interrupted.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { JobView } from '@rankd/protocol';
import { startCluster, type Cluster } from './harness/cluster.js';
import { DDP_RESUME, parseResume, type ResumeAttempt } from './harness/ddp-resume-output.js';
import { PYTHON } from './harness/ddp-output.js';
import { lines } from './harness/labelled.js';
import { clusterTest } from './harness/requirements.js';

const STEPS = 12;
const EVERY = 3;
/** Long enough per step that the kill lands mid-training, after the first checkpoint. */
const SLEEP_S = 0.4;

function trainArgs(dir: string): string[] {
  return [PYTHON, DDP_RESUME, '--steps', String(STEPS), '--every', String(EVERY), '--checkpoint-dir', dir];
}

/** The job as the API shows it, attempts included (the harness's JobView predates them). */
async function jobOf(c: Cluster, id: string): Promise<JobView> {
  const res = await c.api.get<JobView>(`/v1/jobs/${id}`);
  if (res.status !== 200) throw new Error(`GET /v1/jobs/${id}: ${res.status} ${res.text}`);
  return res.body;
}

/** One rank's stdout of one attempt, as the controller stored it. */
async function attemptLog(c: Cluster, id: string, attempt: number, rank: number): Promise<string[]> {
  const res = await c.api.get<string>(`/v1/jobs/${id}/logs?rank=${rank}&stream=stdout&format=text&attempt=${attempt}`);
  if (res.status !== 200) throw new Error(`logs of ${id} attempt ${attempt} rank ${rank}: ${res.status} ${res.text}`);
  return lines(res.text);
}

/** Each rank's one attempt of `attempt`, parsed. */
async function attemptRuns(c: Cluster, job: JobView, attempt: number): Promise<ResumeAttempt[]> {
  const runs: ResumeAttempt[] = [];
  for (let rank = 0; rank < job.ranks.length; rank++) {
    const parsed = parseResume(await attemptLog(c, job.id, attempt, rank));
    if (parsed.other.length > 0 || parsed.attempts.length !== 1)
      throw new Error(`rank ${rank} of attempt ${attempt}: ${JSON.stringify(parsed)}`);
    runs.push(parsed.attempts[0]!);
  }
  return runs;
}

async function waitFor(what: string, ok: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

clusterTest(
  t,
  'DDP with checkpoints: a rank SIGKILLed mid-training, attempt 1 resumes and ends where an uninterrupted run does',
  { needsTorch: true, timeout: 420_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 4 });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rankd-restart-ddp-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const interrupted = path.join(dir, 'interrupted');
    const straight = path.join(dir, 'straight');

    const runArgs = ['run', '-q', '-N', '3', '--ranks-per-node', '1', '--max-restarts', '2', '--name', 'resume'];
    const running = c.rankd([...runArgs, '--', ...trainArgs(interrupted), '--sleep', String(SLEEP_S)], 300_000);

    // the kill lands once a checkpoint exists and training goes on: mid-run, after step 3
    await waitFor(
      'the first checkpoint',
      () => existsSync(interrupted) && readdirSync(interrupted).length > 0,
      120_000,
    );
    const [summary] = await c.jobs();
    const before = await jobOf(c, summary!.id);
    t.equal(before.attempt, 0, 'still the first attempt when the rank is killed');
    const victim = before.ranks[1]!;
    t.ok(victim.pid, 'rank 1 has a pid');
    process.kill(victim.pid!, 'SIGKILL');

    const run = await running;
    t.equal(run.code, 0, `rankd run exits 0: the restarted attempt succeeded (stderr: ${run.stderr.slice(-1500)})`);
    const job = await jobOf(c, before.id);
    t.equal(job.state, 'succeeded');
    t.equal(job.attempt, 1, 'one restart');
    t.same(
      job.attempts.map((a) => a.state),
      ['failed', 'succeeded'],
      'attempt 0 failed, attempt 1 succeeded',
    );
    const first = job.attempts[0]!;
    t.match(first.firstFailure, { rank: 1, node: victim.node, signal: 'SIGKILL' }, 'the first failure is the kill');
    t.same(first.excluded, [], 'a SIGKILL is not a node fault: no node is left out');
    t.equal(job.attempts[1]!.nodes.length, 3, 'attempt 1 runs on 3 hosts too');

    const resumed = await attemptRuns(c, job, 1);
    for (const [rank, r] of resumed.entries()) {
      t.equal(r.env['RANKD_ATTEMPT'], '1', `rank ${rank} of attempt 1 sees RANKD_ATTEMPT=1`);
      t.equal(r.env['TORCHELASTIC_RESTART_COUNT'], '1', `rank ${rank} sees TORCHELASTIC_RESTART_COUNT=1`);
      t.equal(r.env['RANKD_JOB_ID'], job.id, `rank ${rank} sees the same job id`);
      t.ok(typeof r.start === 'number' && r.start >= EVERY && r.start < STEPS, `rank ${rank} resumed at ${r.start}`);
      t.equal(r.done, STEPS, `rank ${rank} finished the run`);
    }
    const digests = new Set(resumed.map((r) => r.params?.digest));
    t.equal(digests.size, 1, 'every rank of attempt 1 ends with bit-identical parameters');

    const plain = await c.rankd([...runArgs, '--', ...trainArgs(straight)], 240_000);
    t.equal(plain.code, 0, `the uninterrupted run exits 0 (stderr: ${plain.stderr.slice(-1500)})`);
    const [latest] = await c.jobs();
    const straightJob = await jobOf(c, latest!.id);
    t.equal(straightJob.attempts.length, 1, 'the uninterrupted run needed no restart');
    const reference = await attemptRuns(c, straightJob, 0);
    t.equal(reference[0]!.start, 'fresh');
    t.equal(
      [...digests][0],
      reference[0]!.params?.digest,
      'the resumed run ends with exactly the parameters of the uninterrupted one',
    );

    t.same(c.leftovers(), [], 'no process of either job remains in any namespace');
    c.checkHistory(t);
  },
);
