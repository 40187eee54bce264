// Turning the spool's raw records (numbers, written by a supervisor or by the agent) into the
// library's RankExit and RankInfo, and writing the "unknown" record when a rank's
// supervisor vanished without one.
import path from 'node:path';
import type { RankExit } from './rank-spec.js';
import { mtimeMs, readJson, writeJsonAtomic, type ExitRecord, type LaunchRecord, type RankRecord } from './spool.js';
import { signalName } from './supervisor.js';

export const files = {
  launch: (dir: string) => path.join(dir, 'launch.json'),
  rank: (dir: string) => path.join(dir, 'rank.json'),
  exit: (dir: string) => path.join(dir, 'exit.json'),
};

export function readRankRecord(dir: string): RankRecord | undefined {
  return readJson<RankRecord>(files.rank(dir));
}

export function readLaunchRecord(dir: string): LaunchRecord | undefined {
  return readJson<LaunchRecord>(files.launch(dir));
}

/** When the rank started: rank.json is written right after the fork. */
export function startedAt(dir: string): string | null {
  const ms = mtimeMs(files.rank(dir));
  return ms === null ? null : new Date(ms).toISOString();
}

/** The rank's exit as recorded in exit.json, or undefined when there is none yet. */
export function readExit(jobId: string, rank: number, dir: string): RankExit | undefined {
  const rec = readJson<ExitRecord>(files.exit(dir));
  if (!rec) return undefined;
  const endedAt = new Date(mtimeMs(files.exit(dir)) ?? Date.now()).toISOString();
  const exit: RankExit = { jobId, rank, outcome: 'unknown', code: null, signal: null, endedAt };
  if (rec.failed) exit.reason = `${rec.failed.code}: ${rec.failed.message}`;
  else if (rec.unknown) exit.reason = rec.unknown;
  else if (rec.signal !== null && rec.signal !== undefined) {
    exit.outcome = 'signaled';
    exit.signal = signalName(rec.signal);
  } else if (typeof rec.code === 'number') {
    exit.outcome = 'exited';
    exit.code = rec.code;
  } else exit.reason = 'exit.json holds neither a code nor a signal';
  if (rec.core) exit.coreDumped = true;
  if (rec.leftover) exit.reason = 'processes of the rank were still present after SIGKILL when the exit was recorded';
  return exit;
}

/** Records an unknown outcome, so that every later reader (a restarted agent too) agrees. */
export function recordUnknown(jobId: string, rank: number, dir: string, why: string): RankExit {
  const rec: ExitRecord = { code: null, signal: null, unknown: why };
  writeJsonAtomic(files.exit(dir), rec);
  return readExit(jobId, rank, dir)!;
}
