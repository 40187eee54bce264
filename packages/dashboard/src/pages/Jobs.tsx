// Jobs: the queue (running, then waiting in start order) and the recent jobs with their ends.
import { api, must } from '../api/client';
import { useResource, useTick } from '../hooks';
import { href } from '../router';
import { StateBadge, count, duration, shellWords, when } from '../format';
import { attemptLabel } from '../components/AttemptTimeline';

export function Jobs() {
  const jobs = useResource(
    () => must(api.GET('/v1/jobs', { params: { query: { limit: 200 } } })),
    [],
    (c) => c.kind === 'job',
  );
  const queue = useResource(
    () => must(api.GET('/v1/queue')),
    [],
    (c) => c.kind === 'job' || c.kind === 'node',
  );
  const now = useTick(1000);
  const waiting = queue.data?.jobs.filter((j) => j.state === 'queued') ?? [];
  return (
    <>
      <h1>Jobs</h1>
      {(jobs.error || queue.error) && (
        <p role="alert" class="error">
          {jobs.error ?? queue.error}
        </p>
      )}
      <section aria-labelledby="queue-h">
        <h2 id="queue-h">Queue</h2>
        {waiting.length === 0 ? (
          <p class="muted">No job is waiting.</p>
        ) : (
          <table class="grid" aria-label="Queued jobs">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Job</th>
                <th scope="col">Owner</th>
                <th scope="col">Priority</th>
                <th scope="col">Asks</th>
                <th scope="col">Waiting</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {waiting.map((q) => (
                <tr key={q.id} data-job={q.id}>
                  <td>{q.position}</td>
                  <td>
                    <a href={href.job(q.id)}>{q.name ?? q.id}</a>
                    {q.attempt > 0 && <span class="restarting"> restarting ({attemptLabel(q)})</span>}
                  </td>
                  <td>{q.owner ?? ''}</td>
                  <td>{q.priority}</td>
                  <td>
                    {q.asked
                      ? `${count(q.asked.ranks, 'rank')} on ${count(q.asked.nodes, 'node')}${q.asked.gpus ? `, ${count(q.asked.gpus, 'GPU')}` : ''}${q.asked.mode !== 'normal' ? `, ${q.asked.mode}` : ''}`
                      : ''}
                  </td>
                  <td>{duration(q.createdAt, null, now)}</td>
                  <td>{q.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="recent-h">
        <h2 id="recent-h">Recent jobs</h2>
        <table class="grid" aria-label="Recent jobs">
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">State</th>
              <th scope="col">Owner</th>
              <th scope="col">Ranks</th>
              <th scope="col">Nodes</th>
              <th scope="col">Submitted</th>
              <th scope="col">Duration</th>
              <th scope="col">Exit</th>
              <th scope="col">Command</th>
            </tr>
          </thead>
          <tbody>
            {(jobs.data?.jobs ?? []).map((j) => (
              <tr key={j.id} data-job={j.id}>
                <td>
                  <a href={href.job(j.id)}>{j.name ?? j.id}</a>
                </td>
                <td>
                  <StateBadge state={j.state} />
                  {j.maxRestarts > 0 && <span class="attempt-of"> {attemptLabel(j)}</span>}
                </td>
                <td>{j.owner ?? ''}</td>
                <td>{j.worldSize}</td>
                <td>
                  {j.nodes.length <= 3
                    ? j.nodes.join(', ')
                    : `${j.nodes.slice(0, 2).join(', ')} +${j.nodes.length - 2}`}
                </td>
                <td>{when(j.createdAt)}</td>
                <td>{duration(j.createdAt, j.endedAt, now)}</td>
                <td>{j.exitCode ?? ''}</td>
                <td class="mono clip" title={shellWords(j.command)}>
                  {shellWords(j.command)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </>
  );
}
