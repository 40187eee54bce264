// Reads a sweep's output as rank 0 printed it: the launcher's first line (which program
// ran), then nccl-tests' layout, which rankd's own benchmark prints too:
//
//   #  Rank  0 Group  0 Pid  1234 on host1 device  0 [...]        one line per rank of the world
//   #  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong
//         8      2 float    sum    -1 12.34   0.00   0.00      0 11.92   0.00   0.00      0
// (nccl-tests pads its columns wider)
//   # Out of bounds values : 0 OK
//
// Each row is one size: out-of-place time, algbw and busbw, then in-place; #wrong of both
// runs is summed into the row's. What cannot be read is reported, never skipped silently.
import type { AllreduceCheckResult, AllreduceRow } from '@rankd/protocol';

export type Implementation = NonNullable<AllreduceCheckResult['implementation']>;

export interface SweepOutput {
  /** From the launcher's line; null when it printed none. */
  implementation: Implementation | null;
  /** Ranks the program listed ("#  Rank N …" lines): the world it ran in. */
  worldSize: number;
  rows: AllreduceRow[];
  /** The closing "# Out of bounds values" line was printed: every size ran. */
  complete: boolean;
  /** Lines that looked like rows but could not be read, with why. */
  problems: string[];
}

const LAUNCHER = /^# rankd check allreduce: implementation=(nccl-tests|rankd-mpi)\b/;
const RANK_LINE = /^#\s+Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+\S+/;
const TRAILER = /^#\s*Out of bounds values\s*:/;
/** The column header; nccl-tests before 2.10 printed no root column for all_reduce. */
const COLUMNS = /^#\s+size\s+count\s+type\s+redop\b/;
/** size count type redop (root), then time algbw busbw #wrong, once or twice. */
const RUN_FIELDS = 4;

export function parseSweepOutput(text: string): SweepOutput {
  const out: SweepOutput = { implementation: null, worldSize: 0, rows: [], complete: false, problems: [] };
  let hasRoot = true;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    const launcher = LAUNCHER.exec(line);
    if (launcher) {
      out.implementation ??= launcher[1] as Implementation;
      continue;
    }
    if (RANK_LINE.test(line)) out.worldSize++;
    else if (TRAILER.test(line)) out.complete = true;
    else if (COLUMNS.test(line)) hasRoot = /\broot\b/.test(line);
    else if (line.trim() !== '' && !line.startsWith('#')) readRow(line, hasRoot ? 5 : 4, out);
  }
  return out;
}

/** One size; `first` is the index of the out-of-place time (after size, count, type, redop and root). */
function readRow(line: string, first: number, out: SweepOutput): void {
  const f = line.trim().split(/\s+/);
  // nccl-tests prints its own errors (NCCL failures, "Test NCCL failure …") as plain lines
  if (f.length < first + RUN_FIELDS || !/^\d+$/.test(f[0]!)) {
    if (/^\d/.test(f[0] ?? '')) out.problems.push(`a row of ${f.length} columns: "${line.trim()}"`);
    return;
  }
  const num = (i: number) => Number(f[i]);
  const outOfPlace = { time: num(first), algbw: num(first + 1), busbw: num(first + 2), wrong: wrongOf(f[first + 3]!) };
  const inPlace = first + RUN_FIELDS;
  const inPlaceWrong = f.length >= inPlace + RUN_FIELDS ? wrongOf(f[inPlace + 3]!) : 0;
  const values = [num(0), num(1), outOfPlace.time, outOfPlace.algbw, outOfPlace.busbw];
  if (values.some((v) => !Number.isFinite(v)) || outOfPlace.wrong === null || inPlaceWrong === null) {
    out.problems.push(`a row that is not numbers, or whose #wrong is not checked: "${line.trim()}"`);
    return;
  }
  out.rows.push({
    bytes: num(0),
    count: num(1),
    type: f[2]!,
    timeUs: outOfPlace.time,
    algbwGBs: outOfPlace.algbw,
    busbwGBs: outOfPlace.busbw,
    wrong: outOfPlace.wrong + inPlaceWrong,
  });
}

/** A #wrong cell: a count, or null for "N/A" (nccl-tests without -c 1 checks nothing). */
function wrongOf(cell: string): number | null {
  return /^\d+$/.test(cell) ? Number(cell) : null;
}
