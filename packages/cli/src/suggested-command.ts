// The planner's nearest feasible spec as a command to paste: the user's own command line
// with the flags it changes replaced, every other word kept as typed and shell-quoted.
import type { Command, Option } from 'commander';
import type { PlacementSpec } from '@rankd/protocol';

/** --ppn is an alias: a suggested --ranks-per-node replaces it too. */
const ALIASES: Record<string, string> = { ppn: 'ranksPerNode' };

/** `args` are the words after the subcommand's name, as typed. */
export function suggestedCommand(cmd: Command, args: readonly string[], suggestion: Partial<PlacementSpec>): string {
  const changed = new Set(Object.keys(suggestion));
  const kept: string[] = [];
  let insertAt: number | null = null;
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (word === '--' || !word.startsWith('-') || word === '-') {
      // the program and its arguments: never rankd's
      kept.push(...args.slice(i));
      break;
    }
    const { option, inlineValue } = optionOf(cmd, word);
    const takesValue = option !== undefined && (option.required || option.optional) && inlineValue === undefined;
    const words = takesValue && i + 1 < args.length ? [word, args[++i]!] : [word];
    if (option && changed.has(keyOf(option))) {
      insertAt ??= kept.length;
      continue;
    }
    kept.push(...words);
  }
  const flags = Object.entries(suggestion).flatMap(([key, value]) => flagWords(cmd, key, value));
  kept.splice(insertAt ?? 0, 0, ...flags);
  return ['rankd', cmd.name(), ...kept].map(shellQuote).join(' ');
}

function keyOf(option: Option): string {
  const name = option.attributeName();
  return ALIASES[name] ?? name;
}

/** The option a word names: "--ntasks", "--ntasks=3", "-n", "-n3". */
function optionOf(cmd: Command, word: string): { option: Option | undefined; inlineValue: string | undefined } {
  if (word.startsWith('--')) {
    const eq = word.indexOf('=');
    const long = eq < 0 ? word : word.slice(0, eq);
    return { option: cmd.options.find((o) => o.long === long), inlineValue: eq < 0 ? undefined : word.slice(eq + 1) };
  }
  const option = cmd.options.find((o) => o.short === word.slice(0, 2));
  return {
    option,
    inlineValue: word.length > 2 && option && (option.required || option.optional) ? word.slice(2) : undefined,
  };
}

/** A spec field as the flag words `rankd run` and `rankd plan` take: {cpusPerRank: 56} → ["-c", "56"]. */
function flagWords(cmd: Command, key: string, value: unknown): string[] {
  if (value === undefined || value === false) return [];
  if (key === 'env') return Object.entries(value as Record<string, string>).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
  const option = cmd.options.find((o) => o.attributeName() === key);
  const flag = option?.short ?? option?.long ?? `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  if (value === true) return [flag];
  return [flag, Array.isArray(value) ? value.join(',') : String(value)];
}

/** A word as a POSIX shell reads it back: bare when safe, else in single quotes. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
