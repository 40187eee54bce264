// What the controller asks a node to run, and what the node answers. These are the
// library's own types; the wire messages (packages/protocol) map onto them.
import type { Socket } from 'node:net';
import { RankErrorCode, rankError } from './errors.js';

export type RankStream = 'stdout' | 'stderr';
export const RANK_STREAMS: readonly RankStream[] = ['stdout', 'stderr'];

/** One rank of one job, as this node must start it. */
export interface RankLaunch {
  jobId: string;
  rank: number;
  /** Program and arguments; never a shell string. argv[0] is looked up on env.PATH. */
  argv: string[];
  /** Absolute; defaults to the user's home when it exists, else "/". */
  cwd?: string;
  /** The rank's own environment: the planner's, PMI's and the job's explicit variables (the agent's own is not inherited). */
  env: Record<string, string>;
  /**
   * What the rank inherits beneath `env`: the agent's PATH and locale, then the submitter's
   * exported variables (rankd run --export). A rank that runs as root gets none of their
   * loader variables: they are left out with a warning, where `env`'s are refused, because
   * nobody named these for this rank.
   */
  inherited?: Record<string, string>;
  /** Planned CPUs; empty means "do not pin". */
  cpus: number[];
  /** Planned NUMA nodes for memory; empty means "no memory binding". */
  memNodes: number[];
  /** Login name or numeric uid; defaults to the agent's own user. */
  user?: string;
  /** Run under a pseudo-terminal (node-pty); such a rank does not survive an agent restart. */
  pty?: boolean;
  cols?: number;
  rows?: number;
  /** Give the rank one end of a socketpair at descriptor 3 (its PMI_FD); not with pty. */
  passSocket?: boolean;
  /** The rank's stdin is a socket whose other end the agent writes (StartedRank.stdin); else /dev/null. Not with pty. */
  stdin?: boolean;
}

/** The binding read back from the rank's own /proc entry after it started. */
export interface RankBinding {
  /** Cpus_allowed_list of the rank; empty when it could not be read. */
  cpus: number[];
  /** The nodes of its bind memory policy when it has one, else Mems_allowed_list. */
  memNodes: number[];
  /** The task memory policy as numa_maps shows it ("bind:0", "default"), when readable. */
  memPolicy?: string;
  /** True when what was read matches the plan. */
  verified: boolean;
  /** Why it does not match; set only for a real mismatch. */
  mismatch?: string;
  /** Set when the binding could not be read at all: the rank was already gone, or never got past its wrappers. */
  unread?: 'exited' | 'timeout';
}

export interface StartedRank {
  jobId: string;
  rank: number;
  pid: number;
  /** The rank's process group (and session); equal to pid. */
  pgid: number;
  /** The per-rank supervisor; null for PTY ranks, whose supervisor is the agent itself. */
  supervisorPid: number | null;
  startedAt: string;
  binding: RankBinding;
  /** What the job should show: memlock not raised, loader variables left out, … */
  warnings: string[];
  /** The rank's own cgroup v2 directory, when the agent has a delegated subtree. */
  cgroup: string | null;
  /** The argv the supervisor executed: the program's. */
  execArgv: string[];
  /** The agent's end of the socket asked for with passSocket. */
  passedSocket?: Socket;
  /** The agent's end of the rank's stdin, asked for with stdin. */
  stdin?: Socket;
}

/** The explicit final message of a rank. `outcome: 'unknown'` is never a success. */
export interface RankExit {
  jobId: string;
  rank: number;
  outcome: 'exited' | 'signaled' | 'unknown';
  /** Exit code when outcome is 'exited'. */
  code: number | null;
  /** Signal name ("SIGKILL") when outcome is 'signaled'. */
  signal: string | null;
  coreDumped?: boolean;
  endedAt: string;
  /** Why the outcome is unknown, or what went wrong around the exit. */
  reason?: string;
}

export type RankState = 'running' | 'ended';

/** A rank this node knows about, live or ended but not yet forgotten. */
export interface RankInfo {
  jobId: string;
  rank: number;
  pid: number | null;
  pgid: number | null;
  supervisorPid: number | null;
  pty: boolean;
  cgroup: string | null;
  startedAt: string | null;
  state: RankState;
  exit?: RankExit;
  /** From launch.json: what was planned, for an agent that restarted and lost its memory. */
  argv?: string[];
  cpus?: number[];
  memNodes?: number[];
}

// Job ids become directory and cgroup names: keep them to a safe alphabet so that no
// id can climb out of the spool ("..", "/") or collide with cgroup interface files.
const JOB_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MAX_RANK = 1 << 24;

export function isValidJobId(jobId: unknown): jobId is string {
  return typeof jobId === 'string' && JOB_ID.test(jobId);
}

export function assertJobId(jobId: unknown): asserts jobId is string {
  if (!isValidJobId(jobId)) throw bad(`job id ${JSON.stringify(jobId)} must match ${JOB_ID}`);
}

export function assertRank(rank: unknown): asserts rank is number {
  if (typeof rank !== 'number' || !Number.isInteger(rank) || rank < 0 || rank >= MAX_RANK) {
    throw bad(`rank ${JSON.stringify(rank)} must be an integer in [0, ${MAX_RANK})`);
  }
}

function bad(message: string): Error {
  return rankError(RankErrorCode.BadLaunch, message);
}

function assertIdSet(name: string, ids: unknown): asserts ids is number[] {
  if (!Array.isArray(ids)) throw bad(`${name} must be an array`);
  const seen = new Set<number>();
  for (const id of ids) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 1 << 20) throw bad(`${name} holds ${id}`);
    if (seen.has(id)) throw bad(`${name} holds ${id} twice`);
    seen.add(id);
  }
}

function assertEnv(what: string, env: Record<string, string>): void {
  if (env === null || typeof env !== 'object' || Array.isArray(env)) throw bad(`${what} must be an object`);
  for (const [k, v] of Object.entries(env)) {
    if (k === '' || k.includes('=') || k.includes('\0')) throw bad(`${what} name ${JSON.stringify(k)} is invalid`);
    if (typeof v !== 'string' || v.includes('\0')) throw bad(`${what} ${k} must be a string without NUL`);
  }
}

/** Throws RANKD_RANK_BAD_LAUNCH with the first thing wrong; returns nothing on success. */
export function validateLaunch(launch: RankLaunch): void {
  if (launch === null || typeof launch !== 'object') throw bad('launch must be an object');
  assertJobId(launch.jobId);
  assertRank(launch.rank);
  const { argv, env } = launch;
  if (!Array.isArray(argv) || argv.length === 0) throw bad('argv must be a non-empty array');
  for (const a of argv) {
    if (typeof a !== 'string' || a.includes('\0')) throw bad('argv elements must be strings without NUL');
  }
  // a program name that looks like an option is a misplaced flag far more often than a
  // program, and helpers that take an argv (setsid, taskset, env) would misread it
  if (argv[0] === '' || argv[0]!.startsWith('-')) throw bad(`argv[0] ${JSON.stringify(argv[0])} is not a program name`);
  assertEnv('env', env);
  if (launch.inherited !== undefined) assertEnv('inherited', launch.inherited);
  assertIdSet('cpus', launch.cpus);
  assertIdSet('memNodes', launch.memNodes);
  if (
    launch.cwd !== undefined &&
    (typeof launch.cwd !== 'string' || !launch.cwd.startsWith('/') || launch.cwd.includes('\0'))
  ) {
    throw bad('cwd must be an absolute path');
  }
  if (
    launch.user !== undefined &&
    (typeof launch.user !== 'string' || !/^[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?$/.test(launch.user))
  ) {
    throw bad(`user ${JSON.stringify(launch.user)} is not a valid user name or uid`);
  }
  if (launch.stdin && launch.pty) throw bad('stdin is not forwarded to a PTY rank');
  for (const k of ['cols', 'rows'] as const) {
    const v = launch[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 10000))
      throw bad(`${k} must be an integer in [1, 10000]`);
  }
}
