// Per-link gauges of /metrics from the last net check (`rankd check net`, or a job's
// preflight): the bandwidth and latency of every measured direction of every link, by
// source, destination and rail. Each stored check replaces the whole set, so a link an older
// check measured leaves the output when a newer one did not; a failed probe has no sample
// rather than a false 0. At start the controller reads the last stored check, so a restart
// does not empty the gauges until the next check.
//
// A full check of N nodes measures N(N−1) directions per rail: 261,632 for 512 nodes, two
// series each. That many series would make every scrape megabytes long and every Prometheus
// that scrapes the controller hold them for its retention, so at most MAX_LINK_DIRECTIONS
// directions are exported (all of them up to 128 nodes on one rail); past that, the slowest
// relative to their rail's median, the flagged ones first, and a gauge says how many were
// left out. The whole matrix stays in the stored check (GET /v1/checks/:id).
import { Gauge, type Registry } from 'prom-client';
import type { CheckResult, CheckSummary, NetCheckResult } from '@rankd/protocol';

/** 128 × 127 directions fit: a 128-node check on one rail is exported whole. */
export const MAX_LINK_DIRECTIONS = 16_384;

/** What the gauges read: CheckService's listener and its store. */
export interface NetCheckSource {
  onNetCheck(listener: (result: NetCheckResult) => void): void;
  list(kind: 'net', limit: number): CheckSummary[];
  get(id: string): CheckResult;
}

/** One exported direction: bytes per second and seconds, Prometheus's base units. */
interface LinkSample {
  labels: { src: string; dst: string; rail: string };
  bytesPerSecond: number | null;
  latencySeconds: number | null;
}

export interface LinkSelection {
  samples: LinkSample[];
  /** Directions with a sample that were not exported (past the cap). */
  omitted: number;
}

/** The directions of a check that the gauges export, at most `max` of them. */
export function selectLinks(result: NetCheckResult, max = MAX_LINK_DIRECTIONS): LinkSelection {
  const measured = result.links.filter((l) => l.error === null && (l.bandwidthBps !== null || l.latencyUs !== null));
  let kept = measured;
  if (measured.length > max) {
    const median = new Map(result.rails.map((r) => [r.name, r.medianBps]));
    const ratio = (l: (typeof measured)[number]): number => {
      const m = median.get(l.rail);
      return l.bandwidthBps === null || !m ? Number.POSITIVE_INFINITY : l.bandwidthBps / m;
    };
    kept = [...measured].sort((a, b) => Number(b.flagged) - Number(a.flagged) || ratio(a) - ratio(b)).slice(0, max);
  }
  return {
    samples: kept.map((l) => ({
      labels: { src: l.src, dst: l.dst, rail: l.rail },
      bytesPerSecond: l.bandwidthBps === null ? null : l.bandwidthBps / 8,
      latencySeconds: l.latencyUs === null ? null : l.latencyUs / 1e6,
    })),
    omitted: measured.length - kept.length,
  };
}

export function registerLinkGauges(registry: Registry, checks: NetCheckSource): void {
  const registers = [registry];
  let current: LinkSelection = { samples: [], omitted: 0 };
  let checkedAt: number | null = null;
  const take = (result: NetCheckResult): void => {
    current = selectLinks(result);
    checkedAt = result.endedAt;
  };
  const last = checks.list('net', 1)[0];
  if (last) {
    const stored = checks.get(last.id);
    if (stored.kind === 'net') take(stored);
  }
  checks.onNetCheck(take);

  new Gauge({
    name: 'rankd_link_bandwidth_bytes_per_second',
    help: 'Bandwidth of one direction of a link (src sends, dst receives) on a rail, from the last net check.',
    labelNames: ['src', 'dst', 'rail'],
    registers,
    collect() {
      this.reset();
      for (const s of current.samples) if (s.bytesPerSecond !== null) this.set(s.labels, s.bytesPerSecond);
    },
  });
  new Gauge({
    name: 'rankd_link_latency_seconds',
    help: 'One-way latency of a link on a rail, from the last net check (half the TCP round trip, or ib_write_lat).',
    labelNames: ['src', 'dst', 'rail'],
    registers,
    collect() {
      this.reset();
      for (const s of current.samples) if (s.latencySeconds !== null) this.set(s.labels, s.latencySeconds);
    },
  });
  new Gauge({
    name: 'rankd_link_check_timestamp_seconds',
    help: 'When the net check the link gauges come from ended (Unix time); 0 before the first check.',
    registers,
    collect() {
      this.set(checkedAt === null ? 0 : checkedAt / 1000);
    },
  });
  new Gauge({
    name: 'rankd_link_directions_omitted',
    help: `Directions of the last net check left out of the link gauges (past ${MAX_LINK_DIRECTIONS}: the fastest).`,
    registers,
    collect() {
      this.set(current.omitted);
    },
  });
}
