// The log stream of a job that restarts (GET /v1/jobs/:id/logs), against a real controller
// and agent: a follower hears the failed attempt's output, one `restart` line, `queued`
// while the --restart-delay runs, `started`, the next attempt's `attempt` line and records
// (offsets from 0 again: its own files), then the job's `end`; an SSE reader resumes in the
// attempt its Last-Event-ID names; `attempt=K` follows one attempt to its own end.
import t from 'tap';
import { localCluster } from '../helpers/cluster.js';
import { httpsFetch } from '../helpers/tls.js';

type Line = Record<string, Record<string, unknown> | string | number>;

t.test('a followed job that fails once and restarts after 2 s', async (t) => {
  const { controller } = await localCluster(t, ['solo']);
  const headers = { authorization: `Bearer ${controller.apiToken}` };
  const get = (query: string, extra: Record<string, string> = {}) =>
    httpsFetch(`${controller.url}/v1/jobs/${id}/logs?${query}`, {
      ca: controller.ca,
      headers: { ...headers, ...extra },
      signal: AbortSignal.timeout(30_000),
    }).then((r) => r.text());
  const { body: job } = await controller.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: {
      command: ['sh', '-c', 'echo "out $RANKD_ATTEMPT"; echo "last words" >&2; [ "$RANKD_ATTEMPT" = 1 ] || exit 4'],
      placement: { ntasks: 1 },
      maxRestarts: 1,
      restartDelay: 2,
    },
  });
  const id = job.id;
  // warnings (RLIMIT_MEMLOCK, …) depend on the host: left out of the sequence
  const parse = (body: string) =>
    body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => !('warning' in l));
  const lines = parse(await get('follow=true&format=ndjson&stream=stdout'));
  const kind = (l: Line) =>
    typeof l.rank === 'number' ? `out ${String(l.data).trim()}@${l.offset}` : Object.keys(l)[0]!;
  const kinds = lines.map(kind);
  const restartAt = kinds.indexOf('restart');
  t.ok(restartAt > 0, `one restart line: ${kinds.join(' ')}`);
  t.equal(kinds.filter((k) => k === 'restart').length, 1);
  t.same(
    kinds.slice(0, restartAt).filter((k) => k.startsWith('out')),
    ['out out 0@0'],
    "attempt 0's output comes before it",
  );
  const after = kinds.slice(restartAt + 1);
  const queued = after.filter((k) => k === 'queued').length;
  t.ok(queued >= 1, 'queued while the delay runs');
  t.same(after.slice(queued), ['started', 'attempt', 'out out 1@0', 'end'], 'then the next attempt, from offset 0');
  t.match(lines[restartAt]!.restart, {
    attempt: 0,
    maxRestarts: 1,
    excluded: [],
    delay: 2,
    failure: { rank: 0, node: 'solo', exitCode: 4, lastLines: ['last words'] },
  });
  t.match(String((lines[restartAt + 1]!.queued as { reason: string }).reason), /^restart 1\/1: /);
  t.match(lines[kinds.indexOf('attempt')]!.attempt, { attempt: 1, nodes: ['solo'] });
  t.match(lines.at(-1)!.end, { state: 'succeeded', exitCode: 0 });

  t.test('attempt=0 followed: its records, then its own end', async (t) => {
    const got = parse(await get('follow=true&format=ndjson&stream=stdout&attempt=0'));
    t.same(got.map(kind), ['out out 0@0', 'end']);
    t.match(got[1]!.end, { state: 'failed', exitCode: 4 });
  });

  t.test('SSE ids name the attempt after the first; a Last-Event-ID resumes there', async (t) => {
    const all = await get('follow=true&format=sse&stream=stdout');
    const ids = [...all.matchAll(/^id: (.*)$/gm)].map((m) => m[1]);
    t.same(ids, ['0o6', 'a1:0o6'], 'attempt 0 bare, attempt 1 prefixed');
    const resumed = await get('follow=true&format=sse&stream=stdout', { 'last-event-id': 'a1:0o0' });
    const events = [...resumed.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]).filter((e) => e !== 'warning');
    t.same(events, ['output', 'end'], 'no restart line and no heading again: it goes on in attempt 1');
    t.match(resumed, '"data":"out 1\\n"');
  });
});
