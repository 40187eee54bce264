// The spool is the node's durable memory of its ranks. Everything a restarted agent
// needs lives here, so the agent itself can be SIGKILLed at any moment:
//
//   <spool>/<jobId>/<rank>/launch.json     what was planned (argv, cpus; never env: it may hold secrets)
//                          rank.json       written by the supervisor once the rank exists (pid, pgid, …)
//                          stdout, stderr  the rank's own fds point here; the files are the buffer
//                          exit.json       written last, atomically, by the supervisor
//                          supervisor.log  the supervisor's own complaints
//
// exit.json exists only once the rank's process group is empty and the output files are
// complete, so "exit.json exists" is the one test of "nothing more will come".
import fs from 'node:fs';
import path from 'node:path';
import { assertJobId, assertRank, isValidJobId, type RankStream } from './rank-spec.js';

/** rank.json: the supervisor writes it right after the fork (the agent does for PTY ranks). */
export interface RankRecord {
  pid: number;
  pgid: number;
  supervisorPid: number | null;
  /** Field 22 of /proc/<supervisorPid>/stat: tells a live supervisor from a reused pid. */
  supervisorStartTicks: number | null;
  cgroup: string | null;
  pty: boolean;
}

/** exit.json as the supervisor writes it: raw numbers, no names. */
export interface ExitRecord {
  code: number | null;
  /** Signal number. */
  signal: number | null;
  core?: boolean;
  /** Processes of the group or cgroup were still there when the supervisor gave up waiting. */
  leftover?: boolean;
  /** The start failed before the program ran: { code: RANKD_RANK_*, message }. */
  failed?: { code: string; message: string } | null;
  /** Set when the outcome is unknown (written by the agent, never by a supervisor). */
  unknown?: string;
}

export interface LaunchRecord {
  argv: string[];
  execArgv: string[];
  cpus: number[];
  memNodes: number[];
  user: string | null;
  pty: boolean;
}

export class Spool {
  constructor(readonly root: string) {
    fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  }

  jobDir(jobId: string): string {
    assertJobId(jobId);
    return path.join(this.root, jobId);
  }

  rankDir(jobId: string, rank: number): string {
    assertRank(rank);
    return path.join(this.jobDir(jobId), String(rank));
  }

  streamPath(jobId: string, rank: number, stream: RankStream): string {
    return path.join(this.rankDir(jobId, rank), stream);
  }

  /** Creates the rank's directory; false when it already exists (a rank is never started twice). */
  createRankDir(jobId: string, rank: number): boolean {
    fs.mkdirSync(this.jobDir(jobId), { recursive: true, mode: 0o700 });
    try {
      fs.mkdirSync(this.rankDir(jobId, rank), { mode: 0o700 });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
  }

  /** Job ids present in the spool (entries that are not directories named like job ids are not ours). */
  jobs(): string[] {
    return subdirs(this.root).filter(isValidJobId);
  }

  ranks(jobId: string): number[] {
    return subdirs(this.jobDir(jobId))
      .filter((n) => /^(0|[1-9]\d{0,7})$/.test(n))
      .map(Number)
      .sort((a, b) => a - b);
  }

  removeJob(jobId: string): void {
    fs.rmSync(this.jobDir(jobId), { recursive: true, force: true });
  }
}

function subdirs(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Reads a JSON file; undefined when it does not exist. A torn file cannot happen: all are renamed into place. */
export function readJson<T>(file: string): T | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return JSON.parse(text) as T;
}

/** Write-then-rename, so that a reader (or a restarted agent) sees the old file or the new one, never half. */
export function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(value) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** mtime of a file in ms, or null. Used for start and end times: the kernel stamps the write (docs/ranks.md, "Spool layout"). */
export function mtimeMs(file: string): number | null {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return null;
  }
}
