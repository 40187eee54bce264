// The lines of a job's log stream (GET /v1/jobs/:id/logs) besides its output records
// (LogRecord): why a followed job still waits, that it started, its warnings, and how it ended. NDJSON
// and frames send each as one JSON line keyed by its kind; SSE as an event of that name
// whose data is the value.
import Type from 'typebox';
import { Nullable } from '../nullable.js';
import { AttemptFailure, JobState, LogRecord } from './jobs.js';

/** A followed job waits in the queue: sent at first and again whenever the reason changes. */
export const LogQueued = Type.Object({ reason: Type.String() });
export type LogQueued = Type.Static<typeof LogQueued>;

/** A followed job left the queue; its output follows from the start. */
export const LogStarted = Type.Object({ state: JobState });
export type LogStarted = Type.Static<typeof LogStarted>;

/**
 * A warning the ranks of one node carry (RLIMIT_MEMLOCK not raised, loader variables left out, …), sent
 * once per node and message when that node's ranks have all started or failed to.
 */
export const LogWarning = Type.Object({
  node: Type.String(),
  ranks: Type.Array(Type.Integer({ minimum: 0 })),
  message: Type.String(),
});
export type LogWarning = Type.Static<typeof LogWarning>;

/** The job ended: the stream's last line. A stream that stops without it was cut short. */
export const LogEnd = Type.Object({ state: JobState, reason: Type.String(), exitCode: Nullable(Type.Integer()) });
export type LogEnd = Type.Static<typeof LogEnd>;

/**
 * An attempt's output begins (0-based `attempt`): sent before each attempt's records when
 * the stream covers more than one, so that readers can head them.
 */
export const LogAttempt = Type.Object({
  attempt: Type.Integer({ minimum: 0 }),
  nodes: Type.Array(Type.String()),
  startedAt: Type.String(),
});
export type LogAttempt = Type.Static<typeof LogAttempt>;

/**
 * A followed job's attempt failed and the job will start again: sent once per failed
 * attempt, before the next attempt's `queued`, `started` and records (whose offsets start
 * again at 0: they are the new attempt's files).
 */
export const LogRestart = Type.Object({
  /** The attempt that failed, 0-based. */
  attempt: Type.Integer({ minimum: 0 }),
  maxRestarts: Type.Integer({ minimum: 0 }),
  failure: Nullable(AttemptFailure),
  /** How the attempt ended. */
  reason: Type.String(),
  /** Nodes left out of the next attempts because of this failure. */
  excluded: Type.Array(Type.String()),
  /** Seconds until the next attempt is queued. */
  delay: Type.Number(),
});
export type LogRestart = Type.Static<typeof LogRestart>;

/**
 * The stream was cut because the token, user or dashboard session that opened it was revoked
 * or removed: its last line instead of `end`. `code` is RANKD_CREDENTIAL_REVOKED.
 */
export const LogRevoked = Type.Object({ code: Type.String(), message: Type.String() });
export type LogRevoked = Type.Static<typeof LogRevoked>;

/** One line of format=ndjson: an output record or a status line. */
export const LogLine = Type.Union([
  LogRecord,
  Type.Object({ queued: LogQueued }),
  Type.Object({ started: LogStarted }),
  Type.Object({ warning: LogWarning }),
  Type.Object({ attempt: LogAttempt }),
  Type.Object({ restart: LogRestart }),
  Type.Object({ end: LogEnd }),
  Type.Object({ revoked: LogRevoked }),
]);
export type LogLine = Type.Static<typeof LogLine>;
