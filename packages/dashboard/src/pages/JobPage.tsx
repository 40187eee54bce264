// One job: its rank map drawn over each node's topology, planned against actual binding,
// every rank's state, exit and environment, its live output, and Cancel for those who may.
import { useState } from 'preact/hooks';
import { JOB_STATE_GROUPS } from '@rankd/protocol/job-list';
import { api, must, type JobView, type SessionView } from '../api/client';
import { Topology } from '../components/Topology';
import { LogView } from '../components/LogView';
import { RankTable } from '../components/RankTable';
import { AttemptTimeline } from '../components/AttemptTimeline';
import { useResource, useTick } from '../hooks';
import { overlayFor } from '../topology/overlay';
import { StateBadge, count, duration, shellWords } from '../format';

/** A job in one of these states has ended: protocol's list, a few strings in the bundle. */
const ENDED: ReadonlySet<string> = new Set(JOB_STATE_GROUPS.done);
/** Topologies drawn at once; a job on more nodes picks which to draw. */
const DRAWN = 4;

export function JobPage({ id, session }: { id: string; session: SessionView }) {
  const job = useResource(
    () => must(api.GET('/v1/jobs/{id}', { params: { path: { id } } })),
    [id],
    (c) => c.kind === 'job' && c.id === id,
  );
  const now = useTick(1000);
  const [message, setMessage] = useState<string | null>(null);
  if (job.error)
    return (
      <p role="alert" class="error">
        {job.error}
      </p>
    );
  const view = job.data;
  if (!view) return <p>Loading job {id}…</p>;
  const grant = session.grants['jobs.control'];
  const mayCancel = grant === 'all' || (grant === 'own' && view.owner === session.user);
  const cancel = async () => {
    if (!confirm(`Cancel job ${view.id}? Every rank gets SIGTERM, then SIGKILL after ${view.grace} s.`)) return;
    try {
      await must(api.POST('/v1/jobs/{id}/cancel', { params: { path: { id } } }));
      setMessage('cancel requested');
    } catch (err) {
      setMessage(`cancel refused: ${(err as Error).message}`);
    }
  };
  return (
    <>
      <h1>
        Job {view.name ?? view.id} <StateBadge state={view.state} />
      </h1>
      <p class="summary">
        {view.id} · {view.owner ?? 'no owner'}
        {view.user ? ` as ${view.user}` : ''} · {count(view.ranks.length || view.rankMap?.worldSize || 0, 'rank')} ·{' '}
        {duration(view.startedAt ?? view.createdAt, view.endedAt, now)}
        {view.exitCode !== null && ` · exit ${view.exitCode}`} · {view.reason}
      </p>
      <p class="mono command">{shellWords(view.command)}</p>
      <div class="actions">
        {!ENDED.has(view.state) && mayCancel && (
          <button type="button" class="danger" onClick={cancel}>
            Cancel job
          </button>
        )}
        {message && <span role="status">{message}</span>}
      </div>
      {(view.maxRestarts > 0 || view.attempts.length > 1) && <AttemptTimeline job={view} now={now} />}
      {view.rankMap ? <RankMapView job={view} /> : <p>Queued: {view.reason}. The rank map is made when it starts.</p>}
      <h2>Output</h2>
      <LogView jobId={view.id} worldSize={view.rankMap?.worldSize ?? 0} />
    </>
  );
}

function RankMapView({ job }: { job: JobView }) {
  const map = job.rankMap!;
  const [picked, setPicked] = useState(0);
  const names = map.nodes.map((n) => n.name);
  const drawn = names.slice(picked, picked + DRAWN);
  return (
    <section aria-labelledby="rankmap-h">
      <h2 id="rankmap-h">Rank map</h2>
      <p class="summary">
        {count(map.worldSize, 'rank')} on {count(map.nodes.length, 'node')} · master {map.masterAddr}:{map.masterPort}
        {map.notes.map((n, i) => (
          <span class="note" key={i}>
            {' '}
            · {n}
          </span>
        ))}
      </p>
      {names.length > DRAWN && (
        <label>
          Nodes drawn{' '}
          <select value={picked} onChange={(e) => setPicked(Number(e.currentTarget.value))}>
            {Array.from({ length: Math.ceil(names.length / DRAWN) }, (_, i) => (
              <option value={i * DRAWN} key={i}>
                {names.slice(i * DRAWN, i * DRAWN + DRAWN).join(', ')}
              </option>
            ))}
          </select>
        </label>
      )}
      {drawn.map((name) => (
        <NodeTopology node={name} job={job} key={name} />
      ))}
      <RankTable job={job} />
    </section>
  );
}

function NodeTopology({ node, job }: { node: string; job: JobView }) {
  const facts = useResource(
    () => must(api.GET('/v1/nodes/{name}/facts', { params: { path: { name: node } } })),
    [node],
    (c) => c.kind === 'node' && c.name === node,
  );
  if (facts.error)
    return (
      <p class="error">
        {node}: {facts.error}
      </p>
    );
  if (!facts.data) return <p>Loading {node}…</p>;
  return <Topology node={node} facts={facts.data} overlay={overlayFor(node, [job])} />;
}
