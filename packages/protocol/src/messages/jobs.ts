// Job messages between the controller and an agent: start, stop and reconcile ranks,
// and carry their output and exit status back.
//
// Output travels as byte ranges of the per-rank spool files, each with its offset,
// so that delivery can be at least once and storage exactly once (de-duplicated by
// offset), and a reader resumes from an offset after any reconnect.
import Type from 'typebox';
import { message } from './envelope.js';
import { PmiJobSpec } from './pmi.js';

const JobId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });
const Rank = Type.Integer({ minimum: 0 });
const IntList = Type.Array(Type.Integer({ minimum: 0 }), { maxItems: 65536 });
export const StreamName = Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]);
export type StreamName = Type.Static<typeof StreamName>;
const Offsets = Type.Object({ stdout: Type.Integer({ minimum: 0 }), stderr: Type.Integer({ minimum: 0 }) });
export const SignalName = Type.String({ pattern: '^SIG[A-Z0-9]+$', maxLength: 16 });

const Env = Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 131072 }));

/** Everything an agent needs to start one rank. */
export const RankLaunch = Type.Object({
  rank: Rank,
  argv: Type.Array(Type.String({ maxLength: 65536 }), { minItems: 1, maxItems: 4096 }),
  cwd: Type.Optional(Type.String({ maxLength: 4096 })),
  env: Env,
  cpus: IntList,
  memNodes: IntList,
  user: Type.Optional(Type.String({ maxLength: 64 })),
  pty: Type.Optional(Type.Boolean()),
  /** The rank reads the job's stdin (rank.stdin frames) instead of /dev/null; never with pty. */
  stdin: Type.Optional(Type.Boolean()),
});
export type RankLaunch = Type.Static<typeof RankLaunch>;

/** controller → agent: start these ranks of a job on this node. */
export const JobStart = message('job.start', {
  jobId: JobId,
  /** Without word from the controller for this long, the agent ends the job's ranks. */
  leaseMs: Type.Integer({ minimum: 1000 }),
  ranks: Type.Array(RankLaunch, { minItems: 1, maxItems: 4096 }),
  /**
   * Variables of every rank here, sent once instead of in each rank's env (most of a rank's
   * environment is the job's: its size, rendezvous, fabric and NCCL settings). A rank's own
   * env wins over these.
   */
  env: Type.Optional(Env),
  /**
   * The submitter's exported environment (JobSubmit.exportEnv), under everything else: the
   * agent lays the agent's PATH and LANG, then these, then PMI's, then the rank's env, then
   * the user's identity variables; loader variables are left out for a rank that runs as root.
   */
  exportEnv: Type.Optional(Env),
  /** Serve every rank a PMI-1 server (PMI_FD, or PMI_PORT + PMI_ID under a terminal). */
  pmi: Type.Optional(PmiJobSpec),
});
export type JobStart = Type.Static<typeof JobStart>;

/** controller → agent: end every rank of the job here (SIGTERM, grace, SIGKILL). */
export const JobAbort = message('job.abort', {
  jobId: JobId,
  graceMs: Type.Integer({ minimum: 0, maximum: 3_600_000 }),
  reason: Type.String({ maxLength: 1024 }),
});
export type JobAbort = Type.Static<typeof JobAbort>;

/** controller → agent: deliver a signal to one rank's process group, or to all of the job's. */
export const JobSignal = message('job.signal', {
  jobId: JobId,
  rank: Type.Optional(Rank),
  signal: SignalName,
});
export type JobSignal = Type.Static<typeof JobSignal>;

/** controller → agent: what it has stored of a rank; the agent sends output from there on. */
export const JobResume = message('job.resume', {
  jobId: JobId,
  rank: Rank,
  offsets: Offsets,
});
export type JobResume = Type.Static<typeof JobResume>;

/** controller → agent: the job's output and exits are stored; the spool may go. */
export const JobRelease = message('job.release', { jobId: JobId });
export type JobRelease = Type.Static<typeof JobRelease>;

export const Binding = Type.Object({
  cpus: IntList,
  memNodes: IntList,
  /** true when /proc/<pid>/status matched the plan. */
  verified: Type.Boolean(),
  /** Why it is not verified: a mismatch, or the rank exited before it could be read. */
  detail: Type.Optional(Type.String({ maxLength: 1024 })),
});
export type Binding = Type.Static<typeof Binding>;

/** agent → controller: a rank is running, with the binding it actually got. */
export const RankStarted = message('rank.started', {
  jobId: JobId,
  rank: Rank,
  pid: Type.Integer({ minimum: 1 }),
  startedAt: Type.String({ maxLength: 64 }),
  binding: Binding,
  warnings: Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 32 }),
});
export type RankStarted = Type.Static<typeof RankStarted>;

/**
 * agent → controller, as a binary frame (binary-frame.ts): the header of bytes
 * [offset, offset + payload length) of a rank's stream; the raw bytes follow it.
 */
export const RankOutput = message('rank.output', {
  jobId: JobId,
  rank: Rank,
  stream: StreamName,
  offset: Type.Integer({ minimum: 0 }),
});
export type RankOutput = Type.Static<typeof RankOutput>;

/**
 * agent → controller: the final word on a rank, sent after all of its output.
 * `outputBytes` lets the controller check it holds every byte before it trusts the end.
 */
export const RankExit = message('rank.exit', {
  jobId: JobId,
  rank: Rank,
  /**
   * Exit code, or null when killed by a signal or when the status is unknown. With `error`
   * (the rank never ran): the status a shell gives that failure, 127 for a program that is
   * not there and 126 for one that cannot be executed, or null.
   */
  code: Type.Union([Type.Integer(), Type.Null()]),
  signal: Type.Union([SignalName, Type.Null()]),
  endedAt: Type.String({ maxLength: 64 }),
  outputBytes: Offsets,
  /** Set when the rank never ran (bad user, missing program, …) or its status is unknown. */
  error: Type.Optional(
    Type.Object({ code: Type.String({ maxLength: 64 }), message: Type.String({ maxLength: 4096 }) }),
  ),
});
export type RankExit = Type.Static<typeof RankExit>;

/** agent → controller, after each welcome: the ranks this agent holds, for reconciliation. */
export const RanksReport = message('ranks.report', {
  ranks: Type.Array(
    Type.Object({
      jobId: JobId,
      rank: Rank,
      state: Type.Union([Type.Literal('running'), Type.Literal('exited')]),
      pid: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
      outputBytes: Offsets,
    }),
    { maxItems: 65536 },
  ),
});
export type RanksReport = Type.Static<typeof RanksReport>;

// ---- a rank's stdin ---------------------------------------------------------------------
//
// The submitter's stdin, relayed by the controller to the agent of each rank that reads it
// (a job's `stdin`). Flow control is by acknowledgement: the controller never has more than
// a window of unacknowledged bytes out per rank, and the agent acknowledges bytes only once
// they are in the rank's pipe, so a fast producer waits instead of filling memory.

/** controller → agent: bytes for the rank's stdin, in order. */
export const RankStdin = message('rank.stdin', {
  jobId: JobId,
  rank: Rank,
  data: Type.String({ maxLength: 262_144, pattern: '^[A-Za-z0-9+/]*={0,2}$' }),
});
export type RankStdin = Type.Static<typeof RankStdin>;

/** controller → agent: the stdin ended (the client's EOF, or it left): close the rank's stdin after what was sent. */
export const RankStdinEnd = message('rank.stdin.end', { jobId: JobId, rank: Rank });
export type RankStdinEnd = Type.Static<typeof RankStdinEnd>;

/** agent → controller: this many more bytes are in the rank's pipe. */
export const RankStdinAck = message('rank.stdin.ack', {
  jobId: JobId,
  rank: Rank,
  bytes: Type.Integer({ minimum: 1 }),
});
export type RankStdinAck = Type.Static<typeof RankStdinAck>;

/** agent → controller: the rank's stdin takes nothing more (the rank closed it or exited, or the agent has no such stdin). */
export const RankStdinClosed = message('rank.stdin.closed', {
  jobId: JobId,
  rank: Rank,
  reason: Type.String({ maxLength: 1024 }),
});
export type RankStdinClosed = Type.Static<typeof RankStdinClosed>;
