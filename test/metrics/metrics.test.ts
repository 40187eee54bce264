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
    return {
      status: r.status,
      body: r.body,
      series: typeof r.body === 'string' ? samples(r.body) : new Map<string, number>(),
    };
  };

  const first = await scrape();
  t.equal(first.status, 200, 'the admin scrapes');
  t.match(
    first.body,
    /^# HELP rankd_nodes Nodes known to the controller, by state\.\n# TYPE rankd_nodes gauge\n/m,
    'Prometheus text format',
  );
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
  t.equal(
    after.series.get('rankd_http_requests_total{method="POST",route="/v1/jobs",status="201"}'),
    2,
    'two submissions, counted by route pattern',
  );
  const byJob = [...after.series.keys()].filter(
    (k) => k.startsWith('rankd_http_requests_total') && /route="\/v1\/jobs\/[a-z0-9]/.test(k),
  );
  t.same(byJob, [], 'no job id ever becomes a label value');

  const nobody = await scrape(null);
  t.equal(nobody.status, 401, 'no token: 401');
  const made = async (name: string, role: string) => {
    const r = await runCli(
      ['user', 'add', name, '--role', role, ...(role === 'user' ? ['--unix-user', 'nobody'] : []), '--json'],
      env,
    );
    t.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { token: string }).token;
  };
  const reader = await scrape(await made('prom', 'reader'));
  t.equal(reader.status, 200, 'a reader scrapes (what a Prometheus server is given)');
  const user = await controller.api<{ code: string; message: string }>('/metrics', {
    token: await made('ursula', 'user'),
  });
  t.equal(user.status, 403, 'the role user may not');
  t.match(user.body, { code: 'RANKD_FORBIDDEN', message: /may not read the metrics/ });
  const refusals = await scrape();
  t.equal(
    refusals.series.get('rankd_http_requests_total{method="GET",route="/metrics",status="403"}'),
    1,
    'refusals are counted too',
  );
});

interface FactsLike {
  cpu: { pus: number; cores: number };
  numa: { nodes: unknown[] };
  memory: { totalKb: number | null };
  gpus: unknown[];
  nics: Array<{ virtual: boolean }>;
  rdma: { devices: Array<{ ports: unknown[] }> };
}

t.test(
  'GET /metrics: rank output stored, each node as its facts say, the queue, and the agent link round trip',
  async (t) => {
    // --heartbeat-ms 200 makes the gateway's liveness ping (one a TTL, 3 heartbeats) go every 0.6 s instead of 15 s
    const { controller, env } = await localCluster(t, ['m1'], { heartbeatMs: 200 });
    const scrape = async () => {
      const r = await controller.api<string>('/metrics');
      t.equal(r.status, 200);
      return samples(r.body);
    };
    const before = await scrape();
    for (const stream of ['stdout', 'stderr']) {
      t.equal(
        before.get(`rankd_log_bytes_total{stream="${stream}"}`),
        0,
        `no ${stream} bytes yet, but the series is there`,
      );
      t.equal(before.get(`rankd_log_lines_total{stream="${stream}"}`), 0, `no ${stream} lines yet`);
    }

    // each rank: 5 lines of 13 bytes on stdout, one of 6 on stderr, and a last line without its newline
    const script = 'for i in 1 2 3 4 5; do echo "out $RANK line $i"; done; echo "err $RANK" >&2; printf "end"';
    const run = await runCli(['run', '-q', '--no-label', '-n', '2', '--', 'sh', '-c', script], env);
    t.equal(run.code, 0, run.stderr);
    const after = await scrape();
    const grew = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    t.equal(grew('rankd_log_bytes_total{stream="stdout"}'), 2 * (5 * 13 + 3), 'every stdout byte of both ranks, once');
    t.equal(
      grew('rankd_log_lines_total{stream="stdout"}'),
      2 * 5,
      'stdout lines: the last one, with no newline, is not a line',
    );
    t.equal(grew('rankd_log_bytes_total{stream="stderr"}'), 2 * 6, 'every stderr byte');
    t.equal(grew('rankd_log_lines_total{stream="stderr"}'), 2, 'stderr lines');
    const { body: jobs } = await controller.api<{ jobs: Array<{ id: string }> }>('/v1/jobs');
    const { body: job } = await controller.api<{ ranks: Array<{ outputBytes: { stdout: number; stderr: number } }> }>(
      `/v1/jobs/${jobs.jobs[0]!.id}`,
    );
    const stored = job.ranks.reduce((n, r) => n + r.outputBytes.stdout + r.outputBytes.stderr, 0);
    t.equal(
      grew('rankd_log_bytes_total{stream="stdout"}') + grew('rankd_log_bytes_total{stream="stderr"}'),
      stored,
      "the counters agree with the job's stored output",
    );

    const facts = await controller.api<FactsLike>('/v1/nodes/m1/facts');
    t.equal(facts.status, 200);
    const f = facts.body;
    const expected: Record<string, number> = {
      rankd_node_cpus: f.cpu.pus,
      rankd_node_cores: f.cpu.cores,
      rankd_node_numa_nodes: f.numa.nodes.length,
      rankd_node_memory_bytes: f.memory.totalKb! * 1024,
      rankd_node_gpus: f.gpus.length,
      rankd_node_nics: f.nics.filter((n) => !n.virtual).length,
      rankd_node_rdma_ports: f.rdma.devices.reduce((n, d) => n + d.ports.length, 0),
    };
    for (const [name, value] of Object.entries(expected))
      t.equal(after.get(`${name}{node="m1"}`), value, `${name}{node="m1"} is the facts' ${value}`);
    t.ok(f.cpu.pus > 0 && f.memory.totalKb! > 0, 'the facts are real ones');
    t.equal(after.get('rankd_node_ranks_live{node="m1"}'), 0, 'no rank runs on the node now');

    // a job holding every core, and one that must wait behind it
    const submit = (ntasks: number) =>
      controller.api<{ id: string; state: string }>('/v1/jobs', {
        method: 'POST',
        body: { command: ['sleep', '30'], cwd: '/tmp', placement: { ntasks, cpusPerRank: 1 } },
      });
    const hog = await submit(f.cpu.cores);
    t.equal(hog.status, 201);
    const waiting = await submit(1);
    t.equal(waiting.body.state, 'queued', 'the second job waits');
    const cancel = () =>
      Promise.all([waiting, hog].map((j) => controller.api(`/v1/jobs/${j.body.id}/cancel`, { method: 'POST' })));
    t.teardown(cancel);
    const busy = await waitUntil('the hog to run every rank', 15_000, async () => {
      const s = await scrape();
      return s.get('rankd_node_ranks_live{node="m1"}') === f.cpu.cores ? s : undefined;
    });
    t.equal(busy.get('rankd_queue_jobs'), 1, 'one job in the queue');
    t.equal(busy.get('rankd_jobs_live{state="queued"}'), 1, 'as rankd_jobs_live says');
    t.equal(busy.get('rankd_ranks_live'), f.cpu.cores, 'as rankd_ranks_live counts them');
    await cancel();
    const idle = await waitUntil('both jobs to end', 15_000, async () => {
      const s = await scrape();
      return s.get('rankd_ranks_live') === 0 && s.get('rankd_queue_jobs') === 0 ? s : undefined;
    });
    t.equal(idle.get('rankd_node_ranks_live{node="m1"}'), 0, 'the node is idle again');

    const timed = await waitUntil('a ping round trip', 10_000, async () => {
      const s = await scrape();
      return (s.get('rankd_agent_link_rtt_seconds_count') ?? 0) > 0 ? s : undefined;
    });
    const rtt = timed.get('rankd_agent_link_last_rtt_seconds{node="m1"}')!;
    t.ok(rtt > 0 && rtt < 5, `the last round trip of m1's link: ${(rtt * 1000).toFixed(2)} ms`);
    t.ok(timed.get('rankd_agent_link_rtt_seconds_sum')! > 0, 'the histogram sums its round trips');
    t.equal(
      timed.get('rankd_agent_link_rtt_seconds_bucket{le="+Inf"}'),
      timed.get('rankd_agent_link_rtt_seconds_count'),
    );

    t.ok(timed.has('rankd_controller_nodejs_eventloop_lag_seconds'), "the controller's event-loop lag");
    t.ok(timed.has('rankd_controller_nodejs_eventloop_lag_p99_seconds'), 'and its 99th percentile');

    // a removed node's link is dropped, and its round trip leaves the output with it
    const removed = await controller.api('/v1/nodes/m1', { method: 'DELETE' });
    t.equal(removed.status, 200);
    const gone = await waitUntil('m1 to be disconnected', 10_000, async () => {
      const s = await scrape();
      return s.get('rankd_agents_connected') === 0 ? s : undefined;
    });
    t.notOk(gone.has('rankd_agent_link_last_rtt_seconds{node="m1"}'), 'no last round trip for a node without a link');
  },
);
