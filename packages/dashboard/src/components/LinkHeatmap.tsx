// One rail of a net check as a heatmap: rows send, columns receive, each cell coloured by the
// direction's bandwidth relative to the rail's median (red at 0, green at the median and
// above), flagged directions outlined and labelled, failed probes crossed out. The cell's
// title holds the figures and the check's `why`, as `rankd check net` prints them.
import { formatBitRate, formatLatency } from '@rankd/protocol/bit-rate';
import type { NetCheck } from '../api/client';

type Link = NetCheck['links'][number];
type Rail = NetCheck['rails'][number];

/** Past this many nodes the cells are bare squares: the figures stay in their titles. */
const LABELLED_NODES = 16;

/** Red (0 % of the median) through yellow to green (the median and above). */
export function ratioColour(ratio: number): string {
  const hue = Math.round(120 * Math.min(1, Math.max(0, ratio)));
  return `hsl(${hue} 70% 78%)`;
}

/** The figure in a cell: in the unit of the rail's median, as the CLI's matrix shows it. */
function short(bps: number, scale: number): string {
  const v = bps / scale;
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

const SCALES: Record<string, number> = { 'bit/s': 1, 'kbit/s': 1e3, 'Mbit/s': 1e6, 'Gbit/s': 1e9, 'Tbit/s': 1e12 };

export function LinkHeatmap({ rail, nodes, links }: { rail: Rail; nodes: string[]; links: Link[] }) {
  const at = new Map(links.map((l) => [`${l.src}\u0000${l.dst}`, l]));
  const unit = rail.medianBps === null ? 'Gbit/s' : formatBitRate(rail.medianBps).split(' ')[1]!;
  const scale = SCALES[unit] ?? 1e9;
  const labelled = nodes.length <= LABELLED_NODES;
  const median = rail.medianBps === null ? 'no median' : `median ${formatBitRate(rail.medianBps)}`;
  const threshold = rail.thresholdBps === null ? '' : `, flagged below ${formatBitRate(rail.thresholdBps)}`;
  const latency = rail.medianLatencyUs === null ? '' : `, latency ${formatLatency(rail.medianLatencyUs)}`;
  return (
    <figure class="heatmap-wrap">
      <figcaption>
        <strong>{rail.name}</strong> ({rail.kind}, {rail.tools.join(', ')}): {median}
        {threshold}
        {latency}. Rows send, columns receive{labelled ? `; figures in ${unit}` : ''}.
      </figcaption>
      <div class="heatmap-scroll">
        <table class={`heatmap${labelled ? '' : ' dense'}`} data-rail={rail.name} aria-label={`Links on ${rail.name}`}>
          <thead>
            <tr>
              <th scope="col" class="corner">
                send ↓ receive →
              </th>
              {nodes.map((dst) => (
                <th scope="col" key={dst}>
                  {dst}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {nodes.map((src) => (
              <tr key={src}>
                <th scope="row">{src}</th>
                {nodes.map((dst) => (
                  <Cell
                    key={dst}
                    src={src}
                    dst={dst}
                    link={at.get(`${src}\u0000${dst}`)}
                    rail={rail}
                    scale={scale}
                    labelled={labelled}
                  />
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}

function Cell(props: {
  src: string;
  dst: string;
  link: Link | undefined;
  rail: Rail;
  scale: number;
  labelled: boolean;
}) {
  const { src, dst, link, rail, scale, labelled } = props;
  const where = { 'data-src': src, 'data-dst': dst };
  if (src === dst) return <td class="self" {...where} />;
  if (!link) return <td class="unmeasured" {...where} title={`${src} → ${dst}: not measured by this check`} />;
  if (link.error !== null || link.bandwidthBps === null)
    return (
      <td
        class="failed flagged"
        {...where}
        title={`${src} → ${dst} on ${rail.name}: failed: ${link.why ?? link.error}`}
      >
        <span class="cell-label">failed</span>
      </td>
    );
  const ratio = rail.medianBps ? link.bandwidthBps / rail.medianBps : 1;
  const figures = [
    formatBitRate(link.bandwidthBps),
    rail.medianBps ? `${Math.round(100 * ratio)} % of the median` : null,
    link.latencyUs === null ? null : `latency ${formatLatency(link.latencyUs)}`,
  ].filter(Boolean);
  const flag = link.flagged ? `\nflagged: ${link.why}` : '';
  const title = `${src} → ${dst} on ${rail.name}: ${figures.join(', ')}${flag}`;
  return (
    <td
      class={link.flagged ? 'flagged' : undefined}
      {...where}
      title={title}
      style={{ background: ratioColour(ratio) }}
    >
      {labelled && short(link.bandwidthBps, scale)}
      {link.flagged && <span class="cell-label">{labelled ? ' slow' : '!'}</span>}
    </td>
  );
}
