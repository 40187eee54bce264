// Option parsers shared by commands; each names the bad value.
import { InvalidArgumentError } from 'commander';

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`"${value}" is not a positive integer`);
  return n;
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
