// bench/RESULTS.md: rendered from per-figure results that the file itself carries, in a
// comment at its end. Running one figure replaces that figure's entry and keeps the others,
// so the file is always whole without a second file to keep in step.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { formatNumber, judge, type Measure, type Row, type Side } from './figure.js';
import { formatMachine, type Machine } from './machine.js';
import type { Stat } from './stats.js';

export interface FigureResult {
  name: string;
  title: string;
  /** ISO date-time of the run that produced this entry. */
  measuredAt: string;
  machine: Machine;
  peerVersions: Record<string, string>;
  rounds: number;
  /** 1-minute load average when the figure started and ended: a busy machine inflates every time. */
  load?: { start: number; end: number };
  rows: Row[];
  limits: string;
  notes: string[];
}

const DATA_OPEN = '<!-- bench-data v1';
const DATA_CLOSE = '-->';

export function loadResults(file: string): FigureResult[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  const at = text.lastIndexOf(DATA_OPEN);
  if (at === -1) return [];
  const end = text.indexOf(DATA_CLOSE, at + DATA_OPEN.length);
  if (end === -1) return [];
  try {
    const data = JSON.parse(text.slice(at + DATA_OPEN.length, end)) as { figures?: FigureResult[] };
    return Array.isArray(data.figures) ? data.figures : [];
  } catch {
    // A hand-edited or truncated file: start over rather than guess.
    return [];
  }
}

/** Replaces the entries of the figures just run, keeps the rest, orders them as `order` lists. */
export function mergeResults(
  previous: FigureResult[],
  fresh: FigureResult[],
  order: readonly string[],
): FigureResult[] {
  const byName = new Map(previous.map((f) => [f.name, f]));
  for (const f of fresh) byName.set(f.name, f);
  const rank = (name: string) => {
    const i = order.indexOf(name);
    return i === -1 ? order.length : i;
  };
  return [...byName.values()].sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name));
}

export function writeResults(file: string, fresh: FigureResult[], order: readonly string[]): FigureResult[] {
  const merged = mergeResults(loadResults(file), fresh, order);
  writeFileSync(file, renderResults(merged));
  return merged;
}

export function renderResults(figures: readonly FigureResult[]): string {
  const out: string[] = [];
  out.push('# rankd benchmarks', '');
  out.push(
    'Written by `npm run bench [-- NAME]` (bench/run.ts); do not edit by hand: the next run rewrites it.',
    'Each number is the median of interleaved rounds (rankd, peer, rankd, peer, …) with the min–max',
    'range in parentheses. A ratio is rankd ÷ peer taken round by round, then the median of those',
    'ratios: below 1× rankd is faster, except for throughput, where above 1× rankd is faster.',
    '',
  );
  out.push(...renderStanding(figures));
  out.push(...renderMachines(figures));
  out.push('## Figures', '');
  out.push('| figure | rankd | peer | ratio | goal | met? |', '| --- | --- | --- | --- | --- | --- |');
  for (const f of figures) for (const row of f.rows) out.push(renderRow(row));
  out.push('');
  out.push('## What limits each figure', '');
  for (const f of figures) {
    out.push(`### ${f.name}: ${f.title}`, '');
    const load = f.load
      ? ` Load average ${f.load.start.toFixed(1)} at the start, ${f.load.end.toFixed(1)} at the end, on ${f.machine.cpus} CPUs.`
      : '';
    out.push(`Measured ${f.measuredAt.slice(0, 16).replace('T', ' ')} UTC, ${f.rounds} rounds.${load}`, '');
    out.push(f.limits, '');
    for (const note of f.notes) out.push(`- ${note}`);
    if (f.notes.length > 0) out.push('');
  }
  // '>' only occurs inside JSON strings, so escaping it keeps "-->" out of the comment.
  const data = JSON.stringify({ figures }, null, 1).replace(/>/g, '\\u003e');
  out.push(`${DATA_OPEN}`, data, DATA_CLOSE, '');
  return out.join('\n');
}

function renderStanding(figures: readonly FigureResult[]): string[] {
  const met: string[] = [];
  const missed: string[] = [];
  // One line per figure and reason: a figure compared with two peers is pending once, not twice.
  const pending = new Set<string>();
  for (const f of figures) {
    for (const row of f.rows) {
      const v = judge(row);
      const against = row.peer && row.ratio ? ` (against ${row.peer.name})` : '';
      if (v.kind === 'met') met.push(row.figure);
      else if (v.kind === 'missed') missed.push(`**${row.figure}**${against} misses its goal: ${v.gap}.`);
      else if (v.kind === 'not-measured') pending.add(`${row.figure}: ${whyNotMeasured(row)}`);
    }
  }
  const out = ['## Where rankd stands', ''];
  out.push(
    `Rows whose goals are met: ${met.length}. Rows that miss a goal: ${missed.length}. Rows not measured yet: ${pending.size}.`,
    '',
  );
  // judged at the start: the load a figure itself makes (32 agents, 2,000 connections) is not "other work"
  const busy = figures.filter((f) => f.load && f.load.start > f.machine.cpus);
  if (busy.length > 0) {
    out.push(
      `Started on a busy machine (1-minute load average above its ${busy[0]!.machine.cpus} CPUs even after waiting for it to settle): ${busy.map((f) => f.name).join(', ')}.`,
      'Their absolute times may be inflated by other work; the ratios, paired round by round, suffer less but not nothing.',
      'Rerun those figures on a quiet machine before reading much into a near miss.',
      '',
    );
  }
  for (const m of missed) out.push(`- ${m}`);
  for (const p of pending) out.push(`- Not measured: ${p}`);
  if (missed.length + pending.size > 0) out.push('');
  return out;
}

function renderMachines(figures: readonly FigureResult[]): string[] {
  const out = ['## Machine, date and peers', ''];
  const machines = new Map<string, string[]>();
  for (const f of figures) {
    const key = formatMachine(f.machine);
    machines.set(key, [...(machines.get(key) ?? []), f.name]);
  }
  if (machines.size === 1) {
    out.push(`- Machine: ${[...machines.keys()][0]}`);
  } else {
    for (const [m, names] of machines) out.push(`- Machine for ${names.join(', ')}: ${m}`);
  }
  // the same note measured on different runs differs only in its numbers: keep the newest
  const notes = new Map<string, string>();
  for (const f of [...figures].sort((a, b) => a.measuredAt.localeCompare(b.measuredAt))) {
    for (const note of f.machine.environment ?? []) notes.set(note.replace(/\d+(\.\d+)?/g, '#'), note);
  }
  for (const note of notes.values()) out.push(`- Environment: ${note}`);
  const dates = figures.map((f) => f.measuredAt).sort();
  if (dates.length > 0) {
    out.push(`- Date: ${day(dates[0]!)}${day(dates[0]!) === day(dates.at(-1)!) ? '' : ` to ${day(dates.at(-1)!)}`}`);
  }
  const versions = new Map<string, string>();
  for (const f of [...figures].sort((a, b) => a.measuredAt.localeCompare(b.measuredAt))) {
    for (const [peer, v] of Object.entries(f.peerVersions)) versions.set(peer, v);
  }
  if (versions.size > 0) {
    out.push('- Peers:');
    for (const [peer, v] of [...versions].sort()) out.push(`  - ${peer}: ${v}`);
  }
  out.push('');
  return out;
}

function day(iso: string): string {
  return iso.slice(0, 10);
}

function renderRow(row: Row): string {
  const verdict = judge(row);
  const met =
    verdict.kind === 'met'
      ? 'yes'
      : verdict.kind === 'missed'
        ? `**no**: ${verdict.gap}`
        : verdict.kind === 'not-measured'
          ? 'not measured'
          : '—';
  const peer = row.peer ? `${row.peer.name}: ${renderSide(row.peer.side)}` : '—';
  const ratio = row.ratio ? renderRatio(row.ratio) : '—';
  const goal = row.goals.length > 0 ? row.goals.map((g) => g.text).join(', ') : '—';
  return `| ${cell(row.figure)} | ${cell(renderSide(row.rankd))} | ${cell(peer)} | ${ratio} | ${cell(goal)} | ${cell(met)} |`;
}

function renderSide(side: Side): string {
  return 'measure' in side ? renderMeasure(side.measure) : `not measured: ${side.notMeasured}`;
}

export function renderMeasure(m: Measure): string {
  const s = m.stat;
  return `${formatNumber(s.median)} ${m.unit} (${formatNumber(s.min)}–${formatNumber(s.max)})`;
}

function renderRatio(s: Stat): string {
  return `${formatNumber(s.median)}× (${formatNumber(s.min)}–${formatNumber(s.max)})`;
}

function whyNotMeasured(row: Row): string {
  if (!('measure' in row.rankd)) return row.rankd.notMeasured;
  if (row.peer && !('measure' in row.peer.side)) return `${row.peer.name}: ${row.peer.side.notMeasured}`;
  return 'no paired ratio';
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}
