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

/** "64MiB", "500k", "1G", "4096" → bytes (k, M, G: powers of 1024, with or without "iB"). */
export function byteSize(value: string): number {
  const m = /^(\d+)\s*(k|m|g)?(i?b)?$/i.exec(value.trim());
  const n = m ? Number(m[1]) * 1024 ** ('kmg'.indexOf((m[2] ?? ' ').toLowerCase()) + 1) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError(`"${value}" is not a size (e.g. 64MiB, 500k, 1G)`);
  return n;
}
