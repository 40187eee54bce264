// Option parsers shared by commands; each names the bad value. They run while commander
// reads the command line, so a bad flag ends the CLI (exit 64) before any request; where
// the controller has the same rule, the bounds come from @rankd/protocol/limits.
import { InvalidArgumentError, type Command } from 'commander';
import { parseDuration, parseSince, SINCE_FORMS } from '@rankd/protocol/duration';
import { withinBounds, type Bounds } from '@rankd/protocol/limits';
import { CliError, ExitCode } from './exit-codes.js';

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

/** A whole number within bounds (`--limit 0` where the controller takes 1 to 10000). */
export function integerIn(bounds: Bounds): (value: string) => number {
  return (value) => {
    const n = /^[-+]?\d+$/.test(value.trim()) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`"${value}" is not a whole number`);
    if (!withinBounds(n, bounds)) throw new InvalidArgumentError(`${n} is out of range (${rangeText(bounds)})`);
    return n;
  };
}

/** Seconds within bounds, as a number ("90", "1.5") or a duration ("30s", "15m", "2h"). */
export function secondsIn(bounds: Bounds): (value: string) => number {
  return (value) => {
    const t = value.trim();
    const s = /^0+(\.0*)?(ms|s|m|h|d)?$/.test(t) ? 0 : parseDuration(t) / 1000;
    if (!Number.isFinite(s))
      throw new InvalidArgumentError(`"${value}" is not a number of seconds or a duration (e.g. 30s, 15m, 2h)`);
    if (!withinBounds(s, bounds))
      throw new InvalidArgumentError(`"${value}" is out of range (${rangeText(bounds, 's')})`);
    return s;
  };
}

/** One of a fixed set of words. */
export function oneOf<T extends string>(values: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(values as readonly string[]).includes(value))
      throw new InvalidArgumentError(`"${value}" is not one of ${values.join(', ')}`);
    return value as T;
  };
}

/** Free text the controller bounds in length (a job name, a drain reason). */
export function textOf(bounds: Bounds): (value: string) => string {
  return (value) => {
    const n = [...value].length;
    if (n < bounds.min) throw new InvalidArgumentError('is empty');
    if (n > bounds.max) throw new InvalidArgumentError(`is ${n} characters long, more than ${bounds.max}`);
    return value;
  };
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
 * A `--since` bound: a duration back from now ("2h"), an ISO time, or epoch milliseconds →
 * the ISO time it stands for, computed here, where the user's "now" is.
 */
export function since(value: string): string {
  const at = parseSince(value, Date.now());
  if (!Number.isFinite(at)) throw new InvalidArgumentError(`"${value}" is not ${SINCE_FORMS}`);
  return new Date(at).toISOString();
}

/** "64MiB", "500k", "1G", "4096" → bytes (k, M, G: powers of 1024, with or without "iB"). */
export function byteSize(value: string): number {
  const m = /^(\d+)\s*(k|m|g)?(i?b)?$/i.exec(value.trim());
  const n = m ? Number(m[1]) * 1024 ** ('kmg'.indexOf((m[2] ?? ' ').toLowerCase()) + 1) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new InvalidArgumentError(`"${value}" is not a size (e.g. 64MiB, 500k, 1G)`);
  return n;
}

function rangeText(b: Bounds, unit = ''): string {
  return b.minExclusive ? `above ${b.min}${unit}, at most ${b.max}${unit}` : `${b.min}${unit} to ${b.max}${unit}`;
}

/**
 * Every option parser of `command` and its subcommands refuses in one form,
 * `rankd: --flag: "value" is not …` with exit 64, instead of commander's own sentence.
 * Called once, after every command has registered.
 */
export function nameFlagsInRefusals(command: Command): void {
  for (const option of command.options) {
    const parse = option.parseArg;
    if (!parse) continue;
    const flag = option.long ?? option.short ?? option.flags;
    option.parseArg = <T>(value: string, previous: T): T => {
      try {
        return parse(value, previous);
      } catch (err) {
        if (!(err instanceof InvalidArgumentError)) throw err;
        // commander's own .choices() says "Allowed choices are …" without the value
        const why = option.argChoices ? `"${value}" is not one of ${option.argChoices.join(', ')}` : err.message;
        throw new CliError(`${flag}: ${why}`, ExitCode.Usage);
      }
    };
  }
  for (const sub of command.commands) nameFlagsInRefusals(sub);
}
