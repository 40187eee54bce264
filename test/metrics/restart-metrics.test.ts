// /metrics and gang restarts, against a real controller and agents: rankd_job_restarts_total
// counts each failed attempt that was queued again, by why it failed, and
// rankd_jobs_restarting the jobs waiting for their next attempt.
import t from 'tap';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

/** `name{labels} value` lines of the exposition text, by series. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

interface JobLike {
  id: string;
  state: string;
  attempt: number;
  endedAt: string | null;
}

t.test('GET /metrics: job restarts by why they failed, and the jobs waiting to restart', async (t) => {
  const { controller, env } = await localCluster(t, ['m1', 'm2']);
  const scrape = async () => {
    const r = await controller.api<string>('/metrics');
    t.equal(r.status, 200);
    return { text: r.body, series: samples(r.body) };
  };
  const restarts = (s: Map<string, number>, reason: string) => s.get(`rankd_job_restarts_total{reason="${reason}"}`);

  const first = await scrape();
  t.match(first.text, /^# TYPE rankd_job_restarts_total counter$/m, 'a counter');
  t.match(first.text, /^# TYPE rankd_jobs_restarting gauge$/m, 'and a gauge');
  for (const reason of ['node-lost', 'signal', 'exit-code', 'failed'])
    t.equal(restarts(first.series, reason), 0, `reason="${reason}" is there at 0 before any restart`);
  t.equal(first.series.get('rankd_jobs_restarting'), 0);

  // attempt 0 exits 3, attempt 1 succeeds
  const exits = await runCli(
    ['run', '-q', '-n', '1', '--max-restarts', '1', '--', 'sh', '-c', '[ "$RANKD_ATTEMPT" = 1 ] || exit 3'],
    env,
  );
  t.equal(exits.code, 0, `the second attempt succeeded: ${exits.stderr}`);
  // attempt 0 is killed by a signal (SIGKILL: not a hardware signal, so its node stays in)
  const killed = await runCli(
    ['run', '-q', '-n', '1', '--max-restarts', '1', '--', 'sh', '-c', '[ "$RANKD_ATTEMPT" = 1 ] || kill -KILL $$'],
    env,
  );
  t.equal(killed.code, 0, `the second attempt succeeded: ${killed.stderr}`);
  const after = (await scrape()).series;
  t.equal(restarts(after, 'exit-code'), 1, 'the attempt that exited 3');
  t.equal(restarts(after, 'signal'), 1, 'the attempt killed by SIGKILL');
  t.equal(restarts(after, 'node-lost'), 0);
  t.equal(after.get('rankd_jobs_ended_total{state="succeeded"}'), 2, 'each job ended once, however many attempts');
  t.equal(after.get('rankd_jobs_restarting'), 0, 'nothing waits to restart');

  // a job waiting out its --restart-delay is counted as restarting until it is cancelled
  const job = await controller.api<JobLike>('/v1/jobs', {
    method: 'POST',
    body: {
      command: ['sh', '-c', 'exit 4'],
      cwd: '/tmp',
      placement: { ntasks: 1 },
      maxRestarts: 2,
      restartDelay: 120,
    },
  });
  t.equal(job.status, 201, JSON.stringify(job.body));
  const id = job.body.id;
  t.teardown(() => controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST' }));
  await waitUntil('the job to wait for its next attempt', 15_000, async () => {
    const v = (await controller.api<JobLike>(`/v1/jobs/${id}`)).body;
    return v.state === 'queued' && v.attempt === 1;
  });
  const waiting = (await scrape()).series;
  t.equal(waiting.get('rankd_jobs_restarting'), 1, 'one job waits to restart');
  t.equal(restarts(waiting, 'exit-code'), 2, 'its failed attempt is counted');
  t.equal(waiting.get('rankd_jobs_live{state="queued"}'), 1, 'it is one of the queued jobs');

  const cancelled = await controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST' });
  t.equal(cancelled.status, 200);
  await waitUntil(
    'the job to end',
    10_000,
    async () => (await controller.api<JobLike>(`/v1/jobs/${id}`)).body.endedAt !== null,
  );
  const done = (await scrape()).series;
  t.equal(done.get('rankd_jobs_restarting'), 0, 'cancelled during its delay: no longer waiting');
  t.equal(restarts(done, 'exit-code'), 2, 'and no restart was counted for the cancel');
});
