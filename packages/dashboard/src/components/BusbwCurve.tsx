// An allreduce sweep's bus bandwidth against the message size, drawn in SVG: the x axis in
// powers of two (the sizes double), busbw in GB/s (10^9 bytes, as nccl-tests prints it) from
// 0. Each point's title gives the row as `rankd check allreduce` prints it.
import type { AllreduceCheck } from '../api/client';

type Row = AllreduceCheck['rows'][number];

const WIDTH = 640;
const HEIGHT = 280;
const PAD = { left: 56, right: 16, top: 12, bottom: 44 };

/** 8 B, 1 KiB, 256 MiB: the sweep's sizes are powers of two. */
export function sizeLabel(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]}`;
}

/** A round step giving about four gridlines up to max. */
function step(max: number): number {
  const raw = max / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
}

export function BusbwCurve({ rows }: { rows: Row[] }) {
  const points = rows.filter((r) => r.bytes > 0).sort((a, b) => a.bytes - b.bytes);
  if (points.length === 0) return null;
  const lo = Math.log2(points[0]!.bytes);
  const hi = Math.max(lo + 1, Math.log2(points.at(-1)!.bytes));
  const peak = Math.max(...points.map((p) => p.busbwGBs));
  const dy = step(peak > 0 ? peak : 1);
  const top = Math.max(dy, Math.ceil(peak / dy) * dy);
  const x = (bytes: number) => PAD.left + ((Math.log2(bytes) - lo) / (hi - lo)) * (WIDTH - PAD.left - PAD.right);
  const y = (gbs: number) => HEIGHT - PAD.bottom - (gbs / top) * (HEIGHT - PAD.top - PAD.bottom);
  // every power of two would crowd the axis: about eight labels
  const every = Math.max(1, Math.ceil((hi - lo) / 8));
  const xTicks: number[] = [];
  for (let e = Math.ceil(lo); e <= hi; e += every) xTicks.push(2 ** e);
  const yTicks: number[] = [];
  for (let v = 0; v <= top + dy / 2; v += dy) yTicks.push(v);
  const range = `${sizeLabel(points[0]!.bytes)} to ${sizeLabel(points.at(-1)!.bytes)}`;
  const line = points.map((p) => `${x(p.bytes).toFixed(1)},${y(p.busbwGBs).toFixed(1)}`).join(' ');
  return (
    <svg
      class="busbw"
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={`busbw against message size, ${range}, peak ${peak.toFixed(2)} GB/s`}
    >
      {yTicks.map((v) => (
        <g key={`y${v}`}>
          <line class="grid" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(v)} y2={y(v)} />
          <text class="tick" x={PAD.left - 6} y={y(v) + 4} text-anchor="end">
            {Number(v.toPrecision(3))}
          </text>
        </g>
      ))}
      {xTicks.map((b) => (
        <text key={`x${b}`} class="tick" x={x(b)} y={HEIGHT - PAD.bottom + 16} text-anchor="middle">
          {sizeLabel(b)}
        </text>
      ))}
      <line class="axis" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(0)} y2={y(0)} />
      <line class="axis" x1={PAD.left} x2={PAD.left} y1={PAD.top} y2={y(0)} />
      <text class="axis-label" x={(PAD.left + WIDTH - PAD.right) / 2} y={HEIGHT - 6} text-anchor="middle">
        message size (log₂)
      </text>
      <text
        class="axis-label"
        x={14}
        y={(PAD.top + HEIGHT - PAD.bottom) / 2}
        text-anchor="middle"
        transform={`rotate(-90 14 ${(PAD.top + HEIGHT - PAD.bottom) / 2})`}
      >
        busbw (GB/s)
      </text>
      <polyline class="curve" points={line} />
      {points.map((p) => (
        <circle
          key={p.bytes}
          class={p.wrong > 0 ? 'point wrong' : 'point'}
          cx={x(p.bytes)}
          cy={y(p.busbwGBs)}
          r={3.5}
          data-bytes={p.bytes}
        >
          <title>
            {`${sizeLabel(p.bytes)}: time ${p.timeUs.toFixed(1)} µs, algbw ${p.algbwGBs.toFixed(2)} GB/s, ` +
              `busbw ${p.busbwGBs.toFixed(2)} GB/s${p.wrong > 0 ? `, ${p.wrong} wrong` : ''}`}
          </title>
        </circle>
      ))}
    </svg>
  );
}
