// GET /metrics against a real controller and agent: Prometheus's text format, the fleet and
// the jobs as they are, request counters keyed by route pattern, and the same token and
// policy checks as every other route (401 without a token, 403 for the role `user`).
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

t.test('GET /metrics: the fleet, the jobs and the API in numbers, for the roles that read the fleet', async (t) => {
  const { controller, env } = await localCluster(t, ['m1']);
  const scrape = async (token?: string | null) => {
    const r = await controller.api<string>('/metrics', { token });
    return { status: r.status, body: r.body, series: typeof r.body === 'string' ? samples(r.body) : new Map<string, number>() };
  };

  const first = await scrape();
  t.equal(first.status, 200, 'the admin scrapes');
  t.match(first.body, /^# HELP rankd_nodes Nodes known to the controller, by state\.\n# TYPE rankd_nodes gauge\n/m, 'Prometheus text format');
  t.equal(first.series.get('rankd_nodes{state="ready"}'), 1, 'one node ready');
  t.equal(first.series.get('rankd_nodes{state="lost"}'), 0, 'states with no node are still there, at 0');
  t.equal(first.series.get('rankd_agents_connected'), 1);
  t.ok((first.series.get('rankd_controller_process_resident_memory_bytes') ?? 0) > 10e6, "the controller's own memory");

  const run = await runCli(['run', '-q', '-n', '2', '--', 'true'], env);
  t.equal(run.code, 0, run.stderr);
  const failing = await runCli(['run', '-q', '-n', '1', '--', 'sh', '-c', 'exit 3'], env);
  t.equal(failing.code, 3, failing.stderr);
  const after = await waitUntil('both jobs counted', 10_000, async () => {
    const s = await scrape();
    return s.series.get('rankd_jobs_ended_total{state="failed"}') === 1 ? s : undefined;
  });
  t.equal(after.series.get('rankd_jobs_ended_total{state="succeeded"}'), 1, 'the job that succeeded');
  t.equal(after.series.get('rankd_jobs_ended_total{state="failed"}'), 1, 'the job that failed');
  t.equal(after.series.get('rankd_jobs_live{state="running"}'), 0, 'no job live');
  t.equal(after.series.get('rankd_jobs_live{state="queued"}'), 0, 'none queued');
  t.ok(after.series.has('rankd_scheduler_last_pass_seconds'), 'the last scheduling pass is timed');
  t.equal(after.series.get('rankd_ranks_live'), 0);
  t.equal(after.series.get('rankd_http_requests_total{method="POST",route="/v1/jobs",status="201"}'), 2, 'two submissions, counted by route pattern');
  const byJob = [...after.series.keys()].filter((k) => k.startsWith('rankd_http_requests_total') && /route="\/v1\/jobs\/[a-z0-9]/.test(k));
  t.same(byJob, [], 'no job id ever becomes a label value');

  const nobody = await scrape(null);
  t.equal(nobody.status, 401, 'no token: 401');
  const made = async (name: string, role: string) => {
    const r = await runCli(['user', 'add', name, '--role', role, ...(role === 'user' ? ['--unix-user', 'nobody'] : []), '--json'], env);
    t.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { token: string }).token;
  };
  const reader = await scrape(await made('prom', 'reader'));
  t.equal(reader.status, 200, 'a reader scrapes (what a Prometheus server is given)');
  const user = await controller.api<{ code: string; message: string }>('/metrics', { token: await made('ursula', 'user') });
  t.equal(user.status, 403, 'the role user may not');
  t.match(user.body, { code: 'RANKD_FORBIDDEN', message: /may not read the metrics/ });
  const refusals = await scrape();
  t.equal(refusals.series.get('rankd_http_requests_total{method="GET",route="/metrics",status="403"}'), 1, 'refusals are counted too');
});
