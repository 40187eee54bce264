// Job views leave the controller through JSON.stringify (api/routes/jobs.ts), so nothing
// filters them on the way out: every answer that carries one must hold exactly what the
// JobView schema declares, field for field, on a real job with a real agent.
import { Value } from 'typebox/value';
import t from 'tap';
import { JobView } from '@rankd/protocol';
import { localCluster } from '../helpers/cluster.js';
import { waitUntil } from '../helpers/daemons.js';

/** What the schema keeps of an answer: Value.Clean drops every property it does not declare. */
const declared = (answer: unknown) => Value.Clean(JobView, structuredClone(answer));

t.test('submit, inspect, signal and cancel answer with the schema, nothing more', async (t) => {
  const { controller } = await localCluster(t, ['solo']);
  const submitted = await controller.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: { command: ['sleep', '30'], placement: { ntasks: 2 }, env: { FROM_TEST: 'yes' } },
  });
  t.equal(submitted.status, 201);
  t.ok(Value.Check(JobView, submitted.body), 'the submit answer is a JobView');
  t.strictSame(submitted.body, declared(submitted.body), 'and holds nothing JobView does not declare');
  const id = submitted.body.id;
  t.teardown(() => controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST' }));

  await waitUntil(
    'job running',
    20_000,
    async () => (await controller.api<{ state: string }>(`/v1/jobs/${id}`)).body.state === 'running',
  );
  const running = await controller.api<{ ranks: Array<{ actual: unknown }> }>(`/v1/jobs/${id}`);
  t.ok(
    running.body.ranks.every((r) => r.actual !== null),
    'the running view carries each rank’s actual binding',
  );
  t.ok(Value.Check(JobView, running.body));
  t.strictSame(running.body, declared(running.body));

  const signalled = await controller.api(`/v1/jobs/${id}/signal`, { method: 'POST', body: { signal: 'SIGCONT' } });
  t.equal(signalled.status, 200);
  t.strictSame(signalled.body, declared(signalled.body));
  const cancelled = await controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST' });
  t.equal(cancelled.status, 200);
  t.strictSame(cancelled.body, declared(cancelled.body));

  const unknown = await controller.api<{ code: string }>('/v1/jobs/nosuchjob', {});
  t.equal(unknown.status, 404);
  t.equal(unknown.body.code, 'RANKD_NOT_FOUND', 'errors on these routes still come as error bodies');
});
