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
