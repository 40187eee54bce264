// REST schemas of jobs: the submission, the job view, and log queries.
import Type from 'typebox';
import { DEFAULT_JOB_LIST_LIMIT, JOB_STATE_GROUPS, MAX_JOB_LIST_LIMIT, type JobStateName } from '../job-list.js';
import type { MpiMode } from '../mpi-modes.js';
import {
  JOB_GRACE_SECONDS,
  JOB_MAX_RESTARTS,
  JOB_NAME_CHARS,
  JOB_RESTART_DELAY_SECONDS,
  JOB_TIMEOUT_SECONDS,
  NET_CHECK_THRESHOLD,
  PRIORITY,
  schemaBounds,
  schemaLength,
} from '../limits.js';
import { Nullable } from '../nullable.js';
import { Binding, SignalName, StreamName } from '../messages/jobs.js';
import { PlacementSpec, RankMap } from '../plan.js';
import { UserName } from './users.js';

export const FailPolicy = Type.Union([Type.Literal('fail-fast'), Type.Literal('wait')]);
export type FailPolicy = Type.Static<typeof FailPolicy>;

/** The schema of MPI_MODES (mpi-modes.ts, which the CLI loads without TypeBox); the check below keeps the two equal. */
export const MpiModeSchema = Type.Union([Type.Literal('pmi1'), Type.Literal('openmpi'), Type.Literal('none')]);
const sameModes: [Type.Static<typeof MpiModeSchema>, MpiMode] extends [MpiMode, Type.Static<typeof MpiModeSchema>]
  ? true
  : never = true;
void sameModes;

/** The ranks that read a job's stdin: one rank, or every rank. */
export const StdinTarget = Type.Union([Type.Literal('all'), Type.Integer({ minimum: 0, maximum: 1 << 24 })]);
export type StdinTarget = Type.Static<typeof StdinTarget>;

/**
 * Which failures start the job's next attempt (rankd run --restart-on): any failure or lost
 * node, only a lost node, or a first failure whose exit status is one of these.
 */
export const RestartOn = Type.Union([
  Type.Literal('any'),
  Type.Literal('node-lost'),
  Type.Array(Type.Integer({ minimum: 0, maximum: 255 }), { minItems: 1, maxItems: 256 }),
]);
export type RestartOn = Type.Static<typeof RestartOn>;

export const DEFAULT_PRIORITY = 0;
export const MIN_PRIORITY = PRIORITY.min;
export const MAX_PRIORITY = PRIORITY.max;

export const JobSubmit = Type.Object(
  {
    /** argv: the program and its arguments. Never a shell string. */
    command: Type.Array(Type.String({ maxLength: 65536 }), { minItems: 1, maxItems: 4096 }),
    name: Type.Optional(Type.String(schemaLength(JOB_NAME_CHARS))),
    cwd: Type.Optional(Type.String({ maxLength: 4096 })),
    /** Added to every rank's environment after the planner's (and so overriding it). */
    // additionalProperties: false makes the key pattern binding (a Record with a pattern only constrains matching keys)
    env: Type.Optional(
      Type.Record(
        Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 }),
        Type.String({ maxLength: 131072 }),
        { additionalProperties: false },
      ),
    ),
    /**
     * The submitter's environment (rankd run --export, ALL by default), under everything
     * rankd sets: the planner's and PMI's variables, `env` and the placement's env win over
     * it, and each node sets HOME, USER, LOGNAME and SHELL of the rank's user. Never
     * RANKD_*, SLURM_* or PMI wire-up (RANKD_ENV_NOT_EXPORTABLE). A rank that runs as root
     * gets none of its loader variables (LD_*, …; the rank's warnings name them).
     * With `env` and the placement's env at most JOB_ENV_MAX_BYTES (RANKD_ENV_TOO_LARGE).
     */
    // any name execve takes (bash exports functions as BASH_FUNC_name%%), as srun passes them
    exportEnv: Type.Optional(
      Type.Record(Type.String({ pattern: '^[^=]+$', maxLength: 256 }), Type.String({ maxLength: 131072 }), {
        additionalProperties: false,
      }),
    ),
    placement: Type.Optional(PlacementSpec),
    /** Run the ranks as this user; root only where the agents allow it. */
    user: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    /** Seconds until the job is ended as timed-out. */
    timeout: Type.Optional(Type.Number(schemaBounds(JOB_TIMEOUT_SECONDS))),
    failPolicy: Type.Optional(FailPolicy),
    /** Seconds between SIGTERM and SIGKILL when ranks are ended. */
    grace: Type.Optional(Type.Number(schemaBounds(JOB_GRACE_SECONDS))),
    /** A resubmission with the same key returns the existing job. */
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    /** Run each rank under a pseudo-terminal. */
    pty: Type.Optional(Type.Boolean()),
    /** MPI wire-up; default `pmi1`. */
    mpi: Type.Optional(MpiModeSchema),
    /** Queue order: higher first, then submission order. Above DEFAULT_PRIORITY only for operators and admins. */
    priority: Type.Optional(Type.Integer({ minimum: MIN_PRIORITY, maximum: MAX_PRIORITY })),
    /** Start now or fail at once with RANKD_WOULD_WAIT (srun --immediate); never queued. */
    immediate: Type.Optional(Type.Boolean()),
    /**
     * Which ranks read the submitter's stdin (srun --input): one rank, or `all` (each gets a
     * copy); absent, every rank's stdin is /dev/null. The bytes come over the stdin WebSocket
     * (STDIN_PATH) and end with it.
     */
    stdin: Type.Optional(StdinTarget),
    /**
     * Attempts after the first (default 0): a failed attempt's ranks are all ended, then the
     * job starts again under the same id, on a new rank map without the nodes that failed it.
     */
    maxRestarts: Type.Optional(Type.Integer(schemaBounds(JOB_MAX_RESTARTS))),
    /** Which failures restart the job; default `any`. */
    restartOn: Type.Optional(RestartOn),
    /** Seconds before the next attempt; restarts within a minute of each other back off from it. */
    restartDelay: Type.Optional(Type.Number(schemaBounds(JOB_RESTART_DELAY_SECONDS))),
    /**
     * Before each attempt's ranks start, measure its nodes (1 s probes, one round of the net
     * check's schedule, then each suspect against a healthy node): a flagged node is left out
     * and the job planned again where its placement allows; otherwise the job fails with the
     * finding (RANKD_PREFLIGHT_FAILED).
     */
    preflight: Type.Optional(Type.Boolean()),
    /** The preflight's threshold: a link below this fraction of its rail's median is slow (default 0.8). */
    preflightThreshold: Type.Optional(
      Type.Number({ minimum: NET_CHECK_THRESHOLD.min, maximum: NET_CHECK_THRESHOLD.max }),
    ),
  },
  { additionalProperties: false },
);
export type JobSubmit = Type.Static<typeof JobSubmit>;

export const JobState = Type.Union([
  /** Waiting for resources (or a per-user limit); its reason says what for. No rank map yet. */
  Type.Literal('queued'),
  Type.Literal('pending'),
  Type.Literal('starting'),
  Type.Literal('running'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
  Type.Literal('cancelled'),
  Type.Literal('timed-out'),
  Type.Literal('lost'),
]);
export type JobState = Type.Static<typeof JobState>;
/** The schema of JOB_STATES (job-list.ts, which the CLI loads without TypeBox); the check below keeps the two equal. */
const sameStates: [JobState, JobStateName] extends [JobStateName, JobState] ? true : never = true;
void sameStates;

export const TERMINAL_JOB_STATES: ReadonlySet<JobState> = new Set(JOB_STATE_GROUPS.done);

export const RankState = Type.Union([
  Type.Literal('pending'),
  Type.Literal('running'),
  Type.Literal('exited'),
  /** It never ran: bad user, missing program, … */
  Type.Literal('failed-to-start'),
  /** Its node was lost, or its supervisor vanished: no exit status. Never success. */
  Type.Literal('unknown'),
]);
export type RankState = Type.Static<typeof RankState>;

export const RankView = Type.Object({
  rank: Type.Integer({ minimum: 0 }),
  node: Type.String(),
  state: RankState,
  pid: Nullable(Type.Integer()),
  startedAt: Nullable(Type.String()),
  endedAt: Nullable(Type.String()),
  exitCode: Nullable(Type.Integer()),
  signal: Nullable(Type.String()),
  planned: Type.Object({ cpus: Type.Array(Type.Integer()), memNodes: Type.Array(Type.Integer()) }),
  actual: Nullable(Binding),
  outputBytes: Type.Object({ stdout: Type.Integer(), stderr: Type.Integer() }),
  error: Nullable(Type.String()),
  warnings: Type.Array(Type.String()),
});
export type RankView = Type.Static<typeof RankView>;

/** The first failure of an attempt: what ended it. */
export const AttemptFailure = Type.Object({
  rank: Type.Integer({ minimum: 0 }),
  node: Type.String(),
  state: RankState,
  exitCode: Nullable(Type.Integer()),
  signal: Nullable(Type.String()),
  /** The sentence that says how the rank ended. */
  reason: Type.String(),
  /** The last lines the rank wrote to stderr (up to 3), oldest first. */
  lastLines: Type.Array(Type.String()),
});
export type AttemptFailure = Type.Static<typeof AttemptFailure>;

/** One start of a job's ranks: the first, or a restart (rankd run --max-restarts). */
export const AttemptView = Type.Object({
  /** 0 for the first; RANKD_ATTEMPT of its ranks. */
  attempt: Type.Integer({ minimum: 0 }),
  /** running while its ranks run; once it is stopped, the end it stops for (endedAt still null); how it ended. */
  state: JobState,
  reason: Type.String(),
  startedAt: Type.String(),
  endedAt: Nullable(Type.String()),
  /** The nodes of its rank map, in node order. */
  nodes: Type.Array(Type.String()),
  /** Its exit status: 0, the first failure's (known once it is stopped), or null while it runs. */
  exitCode: Nullable(Type.Integer()),
  firstFailure: Nullable(AttemptFailure),
  /** Nodes its failure excluded from the job's later attempts. */
  excluded: Type.Array(Type.String()),
  /** Seconds it waited before the next attempt was queued; null for the last attempt. */
  restartDelay: Nullable(Type.Number()),
});
export type AttemptView = Type.Static<typeof AttemptView>;

export const JobView = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  state: JobState,
  reason: Type.String(),
  command: Type.Array(Type.String()),
  cwd: Nullable(Type.String()),
  user: Nullable(Type.String()),
  /** The rankd user who submitted it (null for jobs from before users existed). */
  owner: Nullable(Type.String()),
  failPolicy: FailPolicy,
  timeout: Nullable(Type.Number()),
  grace: Type.Number(),
  pty: Type.Boolean(),
  mpi: MpiModeSchema,
  /** The first failing rank's exit code, or 128+signal; 0 on success; null while running. */
  exitCode: Nullable(Type.Integer()),
  createdAt: Type.String(),
  startedAt: Nullable(Type.String()),
  endedAt: Nullable(Type.String()),
  priority: Type.Integer(),
  /** Null while queued: the plan is made when the job starts, on what is free then. */
  rankMap: Nullable(RankMap),
  /** The ranks of its current (or last) attempt. */
  ranks: Type.Array(RankView),
  /** The current (or last) attempt, 0-based. */
  attempt: Type.Integer({ minimum: 0 }),
  maxRestarts: Type.Integer({ minimum: 0 }),
  restartOn: RestartOn,
  restartDelay: Type.Number(),
  /** Every attempt that started, oldest first. */
  attempts: Type.Array(AttemptView),
  /** Nodes its failed attempts or its preflight left out: its next plans are made without them. */
  excluded: Type.Array(Type.String()),
  /** Whether its nodes are measured before its ranks start (rankd run --preflight). */
  preflight: Type.Boolean(),
  /** The preflight's threshold; null without a preflight. */
  preflightThreshold: Nullable(Type.Number()),
});
export type JobView = Type.Static<typeof JobView>;

export const JobSummary = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  state: JobState,
  reason: Type.String(),
  worldSize: Type.Integer(),
  nodes: Type.Array(Type.String()),
  command: Type.Array(Type.String()),
  owner: Nullable(Type.String()),
  exitCode: Nullable(Type.Integer()),
  createdAt: Type.String(),
  /** When its ranks were started; null while queued, and for a job that ended before it started. */
  startedAt: Nullable(Type.String()),
  endedAt: Nullable(Type.String()),
  /** The current (or last) attempt, 0-based, and how many restarts it may take. */
  attempt: Type.Integer({ minimum: 0 }),
  maxRestarts: Type.Integer({ minimum: 0 }),
});
export type JobSummary = Type.Static<typeof JobSummary>;

export const JobList = Type.Object({
  /** Newest first. */
  jobs: Type.Array(JobSummary),
  /** More jobs match than `limit` let the answer hold: raise it, or narrow the filters. */
  more: Type.Boolean(),
});
export type JobList = Type.Static<typeof JobList>;

/** Job ids are [A-Za-z0-9_-]: `/`, `.`, `..`, NUL and the like are a 400 before anything is looked up. */
const JobId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });

/** The filters of GET /v1/jobs; every one given must hold. */
export const JobListQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_JOB_LIST_LIMIT,
      description: `at most this many jobs (default ${DEFAULT_JOB_LIST_LIMIT})`,
    }),
  ),
  /** Checked by the route (job-list.ts), so that a refusal names the word it does not know. */
  state: Type.Optional(
    Type.String({ maxLength: 256, description: 'comma-separated job states, or active (not ended) or done (ended)' }),
  ),
  /** A rankd user: the owner of the jobs. Beyond oneself only for a role that reads every job. */
  user: Type.Optional(UserName),
  since: Type.Optional(
    Type.String({
      maxLength: 64,
      description: 'submitted at or after this ISO time (or milliseconds since the epoch)',
    }),
  ),
  /** The jobs whose id starts with this: how clients resolve a unique prefix among the jobs their caller may see. */
  idPrefix: Type.Optional(JobId),
});
export type JobListQuery = Type.Static<typeof JobListQuery>;

export const JobParams = Type.Object({ id: JobId });
export type JobParams = Type.Static<typeof JobParams>;

export const JobSignalRequest = Type.Object(
  { signal: SignalName, rank: Type.Optional(Type.Integer({ minimum: 0 })) },
  { additionalProperties: false },
);
export type JobSignalRequest = Type.Static<typeof JobSignalRequest>;

export const LogQuery = Type.Object({
  /** Comma-separated ranks; default all. */
  rank: Type.Optional(Type.String({ pattern: '^[0-9]+(,[0-9]+)*$' })),
  stream: Type.Optional(Type.Union([StreamName, Type.Literal('all')])),
  /** Byte offset to start from (per selected stream). */
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
  follow: Type.Optional(Type.Boolean()),
  /**
   * text: the bytes alone; ndjson: LogRecord lines, then {"end": …}; sse: LogRecord events
   * with resumable ids, then an "end" event; frames: per record a header line
   * {"rank","stream","offset","bytes"} (and "time" with order=time) followed by exactly `bytes` raw bytes, then
   * {"end": …} (what `rankd run` reads: no text decoding, no escaping).
   */
  format: Type.Optional(
    Type.Union([Type.Literal('text'), Type.Literal('ndjson'), Type.Literal('sse'), Type.Literal('frames')]),
  ),
  /**
   * stream (default): each stream in large chunks, round robin, the fastest for bulk reads;
   * time: the output of all ranks in the order the controller stored it, each record with its
   * `time` (what `rankd logs` reads).
   */
  order: Type.Optional(Type.Union([Type.Literal('stream'), Type.Literal('time')])),
  /**
   * One attempt's output (0-based; at most the job's current attempt), ended by that
   * attempt's own `end`. Absent: every attempt in turn, each opened by an `attempt` line
   * (format=text: a line `==> attempt K (nodes a,b; started T) <==`) unless the job has had
   * only its first; a followed job goes on into its next attempts as they start, each
   * after a `restart` line.
   */
  attempt: Type.Optional(Type.Integer({ minimum: 0, maximum: JOB_MAX_RESTARTS.max })),
});

export const LOG_FRAMES_CONTENT_TYPE = 'application/vnd.rankd.log-frames';
export type LogQuery = Type.Static<typeof LogQuery>;

/** One NDJSON / SSE record of the log stream. */
export const LogRecord = Type.Object({
  rank: Type.Integer(),
  stream: StreamName,
  offset: Type.Integer(),
  /** UTF-8 text of the bytes [offset, offset + bytes). */
  data: Type.String(),
  bytes: Type.Integer(),
  /** With order=time: when the controller stored these bytes (RFC 3339, milliseconds). */
  time: Type.Optional(Type.String()),
});
export type LogRecord = Type.Static<typeof LogRecord>;
