// The fabric as the last checks saw it: the last net check's matrix per rail as a heatmap,
// the verdict per node, when it ran and who ran it; and the last allreduce sweep's busbw
// curve. Both are read from the stored checks (GET /v1/checks, GET /v1/checks/:id).
import { formatBitRate, formatLatency } from '@rankd/protocol/bit-rate';
import { api, must, type AllreduceCheck, type CheckResult, type NetCheck } from '../api/client';
import { useResource } from '../hooks';
import { href } from '../router';
import { count, when } from '../format';
import { LinkHeatmap, ratioColour } from '../components/LinkHeatmap';
import { BusbwCurve, sizeLabel } from '../components/BusbwCurve';

/** The newest stored check of a kind, whole, or null when none is stored. */
async function lastCheck(kind: 'net' | 'allreduce'): Promise<CheckResult | null> {
  const list = await must(api.GET('/v1/checks', { params: { query: { kind, limit: 1 } } }));
  const newest = list.checks[0];
  return newest ? must(api.GET('/v1/checks/{id}', { params: { path: { id: newest.id } } })) : null;
}

function ranBy(by: string | null): string {
  return by === null ? 'the controller (a job’s preflight)' : by;
}

const atTime = (ms: number) => when(new Date(ms).toISOString());

export function Network() {
  // a stored net check is announced on /v1/events; an allreduce sweep is not: Reload reads it
  const net = useResource(
    () => lastCheck('net'),
    [],
    (c) => c.kind === 'check',
  );
  const sweep = useResource(
    () => lastCheck('allreduce'),
    [],
    () => false,
  );
  const reload = () => {
    net.reload();
    sweep.reload();
  };
  return (
    <>
      <h1>Network</h1>
      <p class="actions">
        <button type="button" onClick={reload}>
          Reload
        </button>
      </p>
      <section aria-labelledby="net-h">
        <h2 id="net-h">Last net check</h2>
        {net.error && (
          <p role="alert" class="error">
            {net.error}
          </p>
        )}
        {net.data === undefined && !net.error && <p class="muted">Loading…</p>}
        {net.data === null && (
          <p class="muted">
            No net check stored yet: <code>rankd check net</code> measures every pair of nodes.
          </p>
        )}
        {net.data?.kind === 'net' && <NetCheckView check={net.data} />}
      </section>
      <section aria-labelledby="sweep-h">
        <h2 id="sweep-h">Last allreduce sweep</h2>
        {sweep.error && (
          <p role="alert" class="error">
            {sweep.error}
          </p>
        )}
        {sweep.data === null && <p class="muted">No allreduce sweep stored yet.</p>}
        {sweep.data?.kind === 'allreduce' && <SweepView sweep={sweep.data} />}
      </section>
    </>
  );
}

/** 128 × 127 cells: more would make the page slow to draw and impossible to read. */
const MAX_HEATMAP_NODES = 128;

/**
 * The nodes the heatmaps show: every node up to MAX_HEATMAP_NODES; past that, those with a
 * flagged verdict or link, which are what a large check is read for.
 */
export function heatmapNodes(check: NetCheck): { nodes: string[]; note: string | null } {
  const all = check.nodes.map((n) => n.node);
  if (all.length <= MAX_HEATMAP_NODES) return { nodes: all, note: null };
  const involved = new Set(check.nodes.filter((n) => n.verdict !== 'ok').map((n) => n.node));
  for (const l of check.links) if (l.flagged) involved.add(l.src).add(l.dst);
  const nodes = all.filter((n) => involved.has(n)).slice(0, MAX_HEATMAP_NODES);
  const shown =
    nodes.length === 0
      ? 'nothing is flagged, so no heatmap is drawn'
      : `the heatmap shows the ${count(nodes.length, 'node')} with a flagged verdict or link` +
        (involved.size > nodes.length ? ` (the first ${MAX_HEATMAP_NODES} of ${involved.size})` : '');
  return {
    nodes,
    note: `${count(all.length, 'node')}, more than ${MAX_HEATMAP_NODES}: ${shown}. Every node is in the table below.`,
  };
}

function NetCheckView({ check }: { check: NetCheck }) {
  const nodes = check.nodes.map((n) => n.node);
  const flaggedLinks = check.links.filter((l) => l.flagged);
  const drawn = heatmapNodes(check);
  return (
    <>
      <p class="summary" data-testid="net-check-summary">
        Check <span class="mono">{check.id}</span>, ended {atTime(check.endedAt)}, run by {ranBy(check.by)}:{' '}
        {count(nodes.length, 'node')}, {check.roundsRun} of {count(check.rounds, 'round')} of {check.durationS} s,
        threshold {Math.round(check.threshold * 100)} % of the rail median.{' '}
        {check.flagged.length === 0 && flaggedLinks.length === 0
          ? 'No link flagged.'
          : `${count(flaggedLinks.length, 'link direction')} and ${count(check.flagged.length, 'node')} flagged.`}
        {check.drained.length > 0 && ` Drained: ${check.drained.join(', ')}.`}
      </p>
      {check.message && <p role="status">{check.message}</p>}
      {drawn.note && (
        <p role="note" data-testid="heatmap-note">
          {drawn.note}
        </p>
      )}
      {drawn.nodes.length > 0 &&
        check.rails.map((rail) => (
          <LinkHeatmap
            key={rail.name}
            rail={rail}
            nodes={drawn.nodes}
            links={check.links.filter((l) => l.rail === rail.name)}
          />
        ))}
      {drawn.nodes.length > 0 && check.rails.length > 0 && <Legend threshold={check.threshold} />}
      <table class="grid verdicts" aria-label="Verdict per node">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Verdict</th>
            <th scope="col">BW min</th>
            <th scope="col">BW median</th>
            <th scope="col">BW max</th>
            <th scope="col">Latency</th>
            <th scope="col">Why</th>
          </tr>
        </thead>
        <tbody>
          {check.nodes.map((n) => (
            <tr key={n.node} data-node={n.node}>
              <td>
                <a href={href.node(n.node)}>{n.node}</a>
              </td>
              <td class={`verdict ${n.verdict}`}>{n.verdict === 'ok' ? 'ok' : n.verdict.toUpperCase()}</td>
              <td>{n.bandwidth ? formatBitRate(n.bandwidth.min) : '–'}</td>
              <td>{n.bandwidth ? formatBitRate(n.bandwidth.median) : '–'}</td>
              <td>{n.bandwidth ? formatBitRate(n.bandwidth.max) : '–'}</td>
              <td>{n.latencyUs ? formatLatency(n.latencyUs.median) : '–'}</td>
              <td>{n.reason ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {flaggedLinks.length > 0 && (
        <details class="flagged-links" open={flaggedLinks.length <= 20}>
          <summary>{count(flaggedLinks.length, 'flagged link direction')}</summary>
          <ul>
            {flaggedLinks.map((l) => (
              <li key={`${l.rail} ${l.src} ${l.dst}`}>
                {l.src} → {l.dst} on {l.rail}: {l.why}
              </li>
            ))}
          </ul>
        </details>
      )}
    </>
  );
}

function Legend({ threshold }: { threshold: number }) {
  const stops = [0, 0.25, 0.5, 0.75, 1];
  return (
    <ul class="legend heatmap-legend" aria-label="Heatmap legend">
      {stops.map((r) => (
        <li key={r}>
          <span class="swatch" style={{ background: ratioColour(r) }} /> {Math.round(r * 100)} %
          {r === 1 ? ' of the median and above' : ''}
        </li>
      ))}
      <li>
        <span class="swatch flagged" /> flagged: below {Math.round(threshold * 100)} % of the median
      </li>
      <li>
        <span class="swatch failed" /> probe failed
      </li>
    </ul>
  );
}

function SweepView({ sweep }: { sweep: AllreduceCheck }) {
  const peak = sweep.rows.reduce((m, r) => Math.max(m, r.busbwGBs), 0);
  return (
    <>
      <p class="summary" data-testid="sweep-summary">
        Sweep <span class="mono">{sweep.id}</span>, ended {atTime(sweep.endedAt)}, run by {ranBy(sweep.by)}:{' '}
        {count(sweep.ranks, 'rank')} on {sweep.nodes.join(', ')}, {sweep.implementation}, job{' '}
        <a href={href.job(sweep.jobId)}>{sweep.jobId}</a>.
        {sweep.rows.length > 0 && ` Peak busbw ${peak.toFixed(2)} GB/s.`}
        {sweep.wrong > 0 && <strong class="bad"> {count(sweep.wrong, 'wrong element')}.</strong>}
      </p>
      {sweep.message && <p role="status">{sweep.message}</p>}
      <BusbwCurve rows={sweep.rows} />
      {sweep.rows.length > 0 && (
        <details>
          <summary>{count(sweep.rows.length, 'size')}</summary>
          <table class="grid" aria-label="Allreduce sweep">
            <thead>
              <tr>
                <th scope="col">Size</th>
                <th scope="col">Time (µs)</th>
                <th scope="col">algbw (GB/s)</th>
                <th scope="col">busbw (GB/s)</th>
                <th scope="col">#wrong</th>
              </tr>
            </thead>
            <tbody>
              {sweep.rows.map((r) => (
                <tr key={r.bytes}>
                  <td>{sizeLabel(r.bytes)}</td>
                  <td>{r.timeUs.toFixed(1)}</td>
                  <td>{r.algbwGBs.toFixed(2)}</td>
                  <td>{r.busbwGBs.toFixed(2)}</td>
                  <td>{r.wrong}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </>
  );
}
