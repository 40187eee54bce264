// CPU models as /proc/cpuinfo lists them, in runs: lscpu's "CPU types". Big.LITTLE parts
// (ARM P and E cores, which differ in CPU part) and machines with mixed steppings have
// several; lscpu numbers cores and sockets within each run, so the runs are kept as the
// file orders them, not merged by model.
//
// The rules follow util-linux 2.38 (lscpu-cputype.c), since only its reading of the file
// makes the runs mean anything:
// - a line is "key : value"; the key loses trailing blanks and trailing digits ("processor 5"
//   on s390 names processor 5), an empty value makes the line count for nothing;
// - any model line (vendor, model, flags, …) opens a run when none is open, and opens a new
//   one when vendor, model, model name or stepping differs from the open run's value;
// - a processor takes the run that is open when the next processor line (or the end of the
//   file) comes: on x86 and ARM the model lines follow "processor", on s390 they precede it;
// - processors no run claims (old ARM lists every processor first) take the first run.
// The whole file is read, not its first 2 KiB as for the identity: the last entries count.
import type { CpuKind } from '@rankd/protocol';
import type { Sysfs } from './sysfs.js';

type Compared = 'vendor' | 'model' | 'modelName' | 'stepping';

/** Model-line keys lscpu knows, and which of the compared fields each one sets. */
const MODEL_KEYS = new Map<string, Compared | null>([
  ['ASEs implemented', null],
  ['BogoMIPS', null],
  ['CPU implementer', 'vendor'],
  ['CPU part', 'model'],
  ['CPU revision', null],
  ['CPU variant', 'stepping'],
  ['Features', null],
  ['address sizes', null],
  ['bogomips per cpu', null],
  ['cpu', 'modelName'],
  ['cpu family', null],
  ['cpu model', 'model'],
  ['family', null],
  ['features', null],
  ['flags', null],
  ['max thread id', null],
  ['model', 'model'],
  ['model name', 'modelName'],
  ['revision', null],
  ['stepping', 'stepping'],
  ['type', null],
  ['vendor', 'vendor'],
  ['vendor_id', 'vendor'],
]);

const PROCESSOR_KEYS = new Set(['processor', 'cpu number']);

/** lscpu copies keys into a 32-byte buffer: it compares their first 31 characters only. */
const MAX_KEY = 31;

export function readCpuKinds(sys: Sysfs): CpuKind[] {
  const text = sys.raw('/proc/cpuinfo', { optional: true });
  return text === null ? [] : parseCpuKinds(text);
}

export function parseCpuKinds(text: string): CpuKind[] {
  const kinds: Omit<CpuKind, 'cpus'>[] = [];
  const kindOf = new Map<number, number>();
  let open: Omit<CpuKind, 'cpus'> | null = null;
  let current: number | null = null;

  for (const raw of text.split('\n')) {
    const line = parseLine(raw);
    if (line === null) continue;
    if (PROCESSOR_KEYS.has(line.key)) {
      if (current !== null && open !== null) kindOf.set(current, kinds.indexOf(open));
      current = line.keyNumber ?? (/^\+?\d+$/.test(line.value) ? Number(line.value) : 0);
      continue;
    }
    if (!MODEL_KEYS.has(line.key)) continue;
    const field = MODEL_KEYS.get(line.key)!;
    if (open !== null && field !== null && open[field] !== null && open[field] !== line.value) open = null;
    if (open === null) {
      open = { vendor: null, model: null, modelName: null, stepping: null };
      kinds.push(open);
    }
    if (field !== null) open[field] = line.value;
  }
  // the last processor takes the run still open, unless an earlier line already gave it one
  if (current !== null && open !== null && !kindOf.has(current)) kindOf.set(current, kinds.indexOf(open));

  const cpus: number[][] = kinds.map(() => []);
  for (const [cpu, kind] of [...kindOf].sort((a, b) => a[0] - b[0])) cpus[kind]!.push(cpu);
  return kinds.map((k, i) => ({ ...k, cpus: cpus[i]! }));
}

interface Line {
  key: string;
  /** The number a key such as "processor 5" ends with. */
  keyNumber: number | null;
  value: string;
}

// C's isspace in the C locale, not JavaScript's wider trim(); index arithmetic rather than
// regular expressions, since a big x86 machine's file is hundreds of kilobytes of flags
const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);
const isDigit = (c: number) => c >= 48 && c <= 57;

/** The line's key and value, or null when lscpu would make nothing of it. */
function parseLine(raw: string): Line | null {
  const colon = raw.indexOf(':');
  if (colon < 0) return null;
  let start = 0;
  while (start < colon && isSpace(raw.charCodeAt(start))) start++;
  let end = Math.min(colon, start + MAX_KEY);
  while (end > start && isSpace(raw.charCodeAt(end - 1))) end--;
  let digits = end;
  while (digits > start && isDigit(raw.charCodeAt(digits - 1))) digits--;
  let keyNumber: number | null = null;
  if (digits < end) {
    keyNumber = Number(raw.slice(digits, end));
    end = digits;
    while (end > start && isSpace(raw.charCodeAt(end - 1))) end--;
  }
  const key = raw.slice(start, end);
  if (!PROCESSOR_KEYS.has(key) && !MODEL_KEYS.has(key)) return null;
  let from = colon + 1;
  let to = raw.length;
  while (from < to && isSpace(raw.charCodeAt(from))) from++;
  if (from === to) return null;
  // flags and the like only have to be there: their kilobyte of text is never compared
  if (MODEL_KEYS.get(key) === null) return { key, keyNumber, value: '' };
  while (to > from && isSpace(raw.charCodeAt(to - 1))) to--;
  return { key, keyNumber, value: raw.slice(from, to) };
}
