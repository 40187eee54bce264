// Option parsers shared by commands; each names the bad value.
import { InvalidArgumentError } from 'commander';
import { parseDuration } from '@rankd/protocol/duration';

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`"${value}" is not a positive integer`);
  return n;
}

export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`"${value}" is not a whole number`);
  return n;
}

/** A whole number, negative allowed (priorities). */
export function integer(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`"${value}" is not an integer`);
  return n;
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** "24h", "30d", "90s", "500ms" → milliseconds. */
export function duration(value: string): number {
  const ms = parseDuration(value);
  if (!Number.isFinite(ms)) throw new InvalidArgumentError(`"${value}" is not a duration (e.g. 90s, 15m, 24h, 30d)`);
  return ms;
}

/**
 * "30m", "2h", "1d" back from now, or an ISO time ("2026-11-25", "2026-11-25T14:00"; local
 * time unless it ends in Z or an offset) → that instant as an ISO time, as REST takes it.
 */
export function sinceTime(value: string): string {
  const ago = /^(\d+)(s|m|h|d)$/.exec(value);
  if (ago) return new Date(Date.now() - Number(ago[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[ago[2] as 's' | 'm' | 'h' | 'd']).toISOString();
  const iso = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.exec(value);
  // a date alone is local midnight, as a time without an offset is (JavaScript reads it as UTC)
  const at = iso && realDate(value) ? Date.parse(iso[1] === undefined ? `${value}T00:00` : value) : NaN;
  if (!Number.isFinite(at)) throw new InvalidArgumentError(`"${value}" is neither a time back from now (30s, 15m, 2h, 1d) nor an ISO time (2026-11-25T14:00)`);
  return new Date(at).toISOString();
}

/** "2026-02-30" is not a date (JavaScript would read it as 2 March). */
function realDate(iso: string): boolean {
  const [y, m, d] = iso.slice(0, 10).split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d && m >= 1 && m <= 12;
}

/** "64MiB", "500k", "1G", "4096" → bytes (k, M, G: powers of 1024, with or without "iB"). */
export function byteSize(value: string): number {
  const m = /^(\d+)\s*(k|m|g)?(i?b)?$/i.exec(value.trim());
  const n = m ? Number(m[1]) * 1024 ** ('kmg'.indexOf((m[2] ?? ' ').toLowerCase()) + 1) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError(`"${value}" is not a size (e.g. 64MiB, 500k, 1G)`);
  return n;
}
