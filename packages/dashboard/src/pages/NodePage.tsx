// One node: its topology drawn, with the ranks of every live job on it coloured over their CPUs.
import { api, must, type JobView } from '../api/client';
import { Topology } from '../components/Topology';
import { useResource } from '../hooks';
import { href } from '../router';
import { overlayFor, rankColour } from '../topology/overlay';
import { StateBadge } from '../format';

const LIVE = new Set(['pending', 'starting', 'running']);

export function NodePage({ name }: { name: string }) {
  const node = useResource(
    async () => {
      const [view, facts] = await Promise.all([
        must(api.GET('/v1/nodes/{name}', { params: { path: { name } } })),
        must(api.GET('/v1/nodes/{name}/facts', { params: { path: { name } } })),
      ]);
      return { view, facts };
    },
    [name],
    (c) => c.kind === 'node' && c.name === name,
  );
  const jobs = useResource(
    async (): Promise<JobView[]> => {
      const { jobs } = await must(api.GET('/v1/jobs', { params: { query: { limit: 200 } } }));
      const here = jobs.filter((j) => LIVE.has(j.state) && j.nodes.includes(name));
      return Promise.all(here.map((j) => must(api.GET('/v1/jobs/{id}', { params: { path: { id: j.id } } }))));
    },
    [name],
    (c) => c.kind === 'job',
  );
  if (node.error)
    return (
      <p role="alert" class="error">
        {node.error}
      </p>
    );
  if (!node.data) return <p>Loading {name}…</p>;
  const { view, facts } = node.data;
  const live = jobs.data ?? [];
  return (
    <>
      <h1>
        Node {view.name} <StateBadge state={view.state} />
      </h1>
      <p class="summary">
        {view.address ?? 'no address'} · agent {view.version ?? '?'} · {view.stateReason}
        {view.drain && ` · drained: ${view.drain.reason}`} · {facts.host.kernel ?? ''}
      </p>
      {live.length > 0 && (
        <ul class="legend" aria-label="Jobs on this node">
          {live.map((j) => (
            <li key={j.id}>
              <a href={href.job(j.id)}>{j.name ?? j.id}</a> <StateBadge state={j.state} /> ranks{' '}
              {j.rankMap?.ranks
                .filter((r) => r.node === name)
                .map((r) => (
                  <span class="rank-tag" style={{ background: rankColour(r.rank) }} key={r.rank}>
                    r{r.rank}
                  </span>
                ))}
            </li>
          ))}
        </ul>
      )}
      <Topology node={name} facts={facts} overlay={overlayFor(name, live)} />
      {facts.warnings.length > 0 && (
        <details>
          <summary>{facts.warnings.length} facts warnings</summary>
          <ul>
            {facts.warnings.map((w, i) => (
              <li key={i}>
                {w.code}: {w.message}
              </li>
            ))}
          </ul>
        </details>
      )}
    </>
  );
}
