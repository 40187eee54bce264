// The numeric bounds of request fields, in a module without TypeBox: the REST schemas are
// built from them, and the CLI checks its flags against them before it sends anything, so
// the two cannot disagree and `rankd` need not load the schema library to check a flag.

/** An inclusive range; with `minExclusive`, min itself is refused (a time that must be more than 0). */
export interface Bounds {
  readonly min: number;
  readonly max: number;
  readonly minExclusive?: boolean;
}

/** Queue order of a job (`--priority`): higher first. */
export const PRIORITY: Bounds = { min: -1000, max: 1000 };

/** Seconds until a job is ended as timed-out (a year at most). */
export const JOB_TIMEOUT_SECONDS: Bounds = { min: 0, max: 31_536_000, minExclusive: true };
/** Seconds between SIGTERM and SIGKILL when ranks are ended. */
export const JOB_GRACE_SECONDS: Bounds = { min: 0, max: 3600 };
/** Restarts of a job after its first attempt (rankd run --max-restarts). */
export const JOB_MAX_RESTARTS: Bounds = { min: 0, max: 1000 };
/** Seconds before a failed job's next attempt starts (rankd run --restart-delay). */
export const JOB_RESTART_DELAY_SECONDS: Bounds = { min: 0, max: 86_400 };
/** The grace of a job that names none. */
export const DEFAULT_JOB_GRACE_SECONDS = 10;

/** The counts of a placement spec (`rankd plan`, `rankd run`, the REST job spec). */
export const PLACEMENT = {
  nodes: { min: 1, max: 65536 },
  ntasks: { min: 1, max: 1 << 20 },
  ranksPerNode: { min: 1, max: 4096 },
  cpusPerRank: { min: 1, max: 65536 },
  commWorkers: { min: 0, max: 1024 },
  gpusPerRank: { min: 0, max: 256 },
  masterPort: { min: 1, max: 65535 },
} as const satisfies Record<string, Bounds>;

/** Seconds a `rankd exec` command may run on a host. */
export const EXEC_TIMEOUT_SECONDS: Bounds = { min: 0, max: 86_400, minExclusive: true };
/** Output kept per stream and host of an exec. */
export const EXEC_OUTPUT_BYTES: Bounds = { min: 0, max: 256 * 1024 };
/** Seconds `rankd ping` and `rankd doctor` wait for each agent. */
export const PROBE_TIMEOUT_SECONDS: Bounds = { min: 0, max: 600, minExclusive: true };

/** Seconds of traffic per probe of `rankd check net --duration`. */
export const NET_CHECK_DURATION_S = { min: 1, max: 60, default: 2 } as const;
/** `rankd check net --threshold`: a link below this fraction of its rail's median is flagged. */
export const NET_CHECK_THRESHOLD = { min: 0.05, max: 1, default: 0.8 } as const;
/** Message sizes of `rankd check allreduce` (--min-bytes, --max-bytes): 8 B to 256 MiB by default, 8 GiB at most. */
export const ALLREDUCE_BYTES = { min: 8, max: 8 * 1024 ** 3, defaultMin: 8, defaultMax: 256 * 1024 ** 2 } as const;
/** Timed iterations per size of `rankd check allreduce --iterations` (nccl-tests' default 20). */
export const ALLREDUCE_ITERATIONS = { min: 1, max: 10_000, default: 20 } as const;
/** Seconds until the sweep's job is ended as timed-out (`--timeout`; default from the sizes). */
export const ALLREDUCE_TIMEOUT_S: Bounds = { min: 10, max: 86_400 };

/** Lifetime of a join token, in seconds (a year at most). */
export const JOIN_TOKEN_TTL_SECONDS: Bounds = { min: 1, max: 365 * 86_400 };
/** Nodes one join token may enroll. */
export const JOIN_TOKEN_USES: Bounds = { min: 1, max: 100_000 };

/** Entries one GET /v1/audit answers. */
export const AUDIT_LIMIT: Bounds = { min: 1, max: 10_000 };

/** Lengths, in characters, of the free texts the CLI passes on as typed. */
export const JOB_NAME_CHARS: Bounds = { min: 0, max: 128 };
export const DRAIN_REASON_CHARS: Bounds = { min: 1, max: 500 };
/** Of a token's or a join token's description. */
export const DESCRIPTION_CHARS: Bounds = { min: 0, max: 200 };

/** The JSON Schema keywords of a range, as TypeBox takes them. */
export function schemaBounds(b: Bounds): { minimum?: number; exclusiveMinimum?: number; maximum: number } {
  return b.minExclusive ? { exclusiveMinimum: b.min, maximum: b.max } : { minimum: b.min, maximum: b.max };
}

/** The JSON Schema keywords of a string's length. */
export function schemaLength(b: Bounds): { minLength?: number; maxLength: number } {
  return b.min > 0 ? { minLength: b.min, maxLength: b.max } : { maxLength: b.max };
}

/** Whether a number lies within the bounds. */
export function withinBounds(n: number, b: Bounds): boolean {
  return (b.minExclusive ? n > b.min : n >= b.min) && n <= b.max;
}
