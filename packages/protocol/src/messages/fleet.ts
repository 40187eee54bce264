// Fleet messages between the controller and an agent: ad-hoc commands, pings, the
// doctor's node inspection and TCP probes, and interactive PTY sessions.
//
// Every request carries a required `id` that its reply repeats: the controller keeps
// many requests open on one link (one exec per pattern match, a probe per node pair)
// and must route each reply to its waiter.
import Type from 'typebox';
import { EXEC_OUTPUT_BYTES } from '../limits.js';
import { SignalName } from './jobs.js';
import { NodeName } from './session.js';

export const RequestId = Type.String({ minLength: 1, maxLength: 128 });

/**
 * Like `message()` from the envelope, with `id` required: the envelope's optional id
 * would type every reply's id as possibly missing.
 */
function message<const Name extends string, const P extends Type.TProperties>(type: Name, properties: P) {
  return Type.Object(
    { type: Type.Literal(type), id: RequestId, ...properties },
    { additionalProperties: false, $id: type },
  );
}
const Argv = Type.Array(Type.String({ maxLength: 65536 }), { minItems: 1, maxItems: 4096 });
// patternProperties alone let other keys through: additionalProperties closes the record
export const EnvVars = Type.Record(
  Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 }),
  Type.String({ maxLength: 131072 }),
  { additionalProperties: false },
);
const UserName = Type.String({ minLength: 1, maxLength: 64 });
const Path = Type.String({ minLength: 1, maxLength: 4096 });
/** Raw bytes as base64; 360,000 characters hold 270,000 bytes. */
const Base64 = Type.String({ maxLength: 360_000, pattern: '^[A-Za-z0-9+/]*={0,2}$' });
const Millis = Type.Number({ minimum: 0 });
const FailureDetail = Type.Object(
  { code: Type.String({ maxLength: 64 }), message: Type.String({ maxLength: 4096 }) },
  { additionalProperties: false },
);

/** The largest per-stream output an exec may return: both streams fit one frame. */
export const MAX_EXEC_OUTPUT_BYTES = EXEC_OUTPUT_BYTES.max;
/** Terminal size limits: what a real terminal can be, not what a frame can carry. */
const Cols = Type.Integer({ minimum: 1, maximum: 10_000 });
const Rows = Type.Integer({ minimum: 1, maximum: 10_000 });

// ---- ad-hoc commands ----------------------------------------------------------------

/** controller → agent: run argv once, capture capped output, report the exit. */
export const ExecRun = message('exec.run', {
  argv: Argv,
  cwd: Type.Optional(Path),
  env: Type.Optional(EnvVars),
  user: Type.Optional(UserName),
  /** After this long the process group gets SIGTERM, then SIGKILL. */
  timeoutMs: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  /** Bytes kept per stream; the rest is counted, not kept. */
  maxOutputBytes: Type.Integer({ minimum: 0, maximum: MAX_EXEC_OUTPUT_BYTES }),
});
export type ExecRun = Type.Static<typeof ExecRun>;

/** agent → controller: the end of an exec.run. */
export const ExecResult = message('exec.result', {
  /** Exit code, or null when killed by a signal or never started. */
  code: Type.Union([Type.Integer(), Type.Null()]),
  signal: Type.Union([SignalName, Type.Null()]),
  /** The first maxOutputBytes of each stream, base64. */
  stdout: Base64,
  stderr: Base64,
  /** Every byte the stream carried, kept or not: more than kept means truncated. */
  stdoutBytes: Type.Integer({ minimum: 0 }),
  stderrBytes: Type.Integer({ minimum: 0 }),
  durationMs: Millis,
  timedOut: Type.Boolean(),
  /** Set when the command never ran (no such program, bad user, bad cwd). */
  error: Type.Optional(FailureDetail),
});
export type ExecResult = Type.Static<typeof ExecResult>;

/**
 * controller → agent: end a running exec.run (same id) at once: its session gets SIGTERM, then
 * SIGKILL. Sent when the credential that started it is revoked; the controller answers for it
 * without waiting, so the exec.result that follows is dropped.
 */
export const ExecCancel = message('exec.cancel', { reason: Type.String({ maxLength: 1024 }) });
export type ExecCancel = Type.Static<typeof ExecCancel>;

// ---- ping ---------------------------------------------------------------------------

/** controller → agent: answer at once; the round trip is the latency. */
export const FleetPing = message('fleet.ping', {});
export type FleetPing = Type.Static<typeof FleetPing>;

export const FleetPong = message('fleet.pong', {
  /** The agent's wall clock (ms since the epoch) when it answered. */
  agentTime: Millis,
});
export type FleetPong = Type.Static<typeof FleetPong>;

// ---- doctor ---------------------------------------------------------------------------

/** controller → agent: what the facts do not say — clock, tools, paths. */
export const DoctorInspect = message('doctor.inspect', {
  paths: Type.Array(Path, { maxItems: 256 }),
});
export type DoctorInspect = Type.Static<typeof DoctorInspect>;

export const PathState = Type.Object(
  {
    path: Path,
    exists: Type.Boolean(),
    kind: Type.Union([Type.Literal('file'), Type.Literal('directory'), Type.Literal('other'), Type.Null()]),
    /** Why it could not be read (ENOENT, EACCES, a stale NFS handle …). */
    error: Type.Union([Type.String({ maxLength: 1024 }), Type.Null()]),
  },
  { additionalProperties: false },
);
export type PathState = Type.Static<typeof PathState>;

/** The rank supervisor that starts this node's ranks (packages/agent/native): its version, or why it cannot. */
export const RankLauncher = Type.Object(
  {
    path: Path,
    /** What it answered to --version (native/version.h's RS_VERSION); null when it did not answer. */
    version: Type.Union([Type.String({ maxLength: 32 }), Type.Null()]),
    /** Why this node cannot start ranks (not built, not runnable, of other sources); null when it can. */
    problem: Type.Union([Type.String({ maxLength: 4096 }), Type.Null()]),
  },
  { additionalProperties: false },
);
export type RankLauncher = Type.Static<typeof RankLauncher>;

/**
 * Where each program `rankd check net` runs is, or null when it is not installed: iperf3
 * over TCP, perftest's ib_write_bw and ib_write_lat over RDMA.
 */
export const ProbeTools = Type.Object(
  {
    iperf3: Type.Union([Path, Type.Null()]),
    ib_write_bw: Type.Union([Path, Type.Null()]),
    ib_write_lat: Type.Union([Path, Type.Null()]),
  },
  { additionalProperties: false },
);
export type ProbeTools = Type.Static<typeof ProbeTools>;

/**
 * How the agent runs: an ephemeral agent (`rankd agent --ephemeral`, inside a Slurm
 * allocation or a pod) runs as the invoking user and starts ranks as that user only.
 */
export const AgentMode = Type.Object(
  {
    ephemeral: Type.Boolean(),
    /** The agent's own user name and uid (ranks of an unprivileged agent run as them). */
    user: Type.String({ minLength: 1, maxLength: 256 }),
    uid: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type AgentMode = Type.Static<typeof AgentMode>;

export const DoctorNodeReport = message('doctor.report', {
  agentTime: Millis,
  /** Where numactl is, or null when it is not installed. */
  numactl: Type.Union([Path, Type.Null()]),
  paths: Type.Array(PathState, { maxItems: 256 }),
  /** Absent from agents too old to report their rank supervisor. */
  launcher: Type.Optional(RankLauncher),
  /** Absent from agents older than `rankd check net`. */
  probeTools: Type.Optional(ProbeTools),
  /** Absent from agents older than ephemeral agents. */
  agent: Type.Optional(AgentMode),
});
export type DoctorNodeReport = Type.Static<typeof DoctorNodeReport>;

// ---- TCP probes between agents --------------------------------------------------------

/** controller → agent: listen for probes on the address ranks will use, for ttlMs. */
export const ProbeListen = message('probe.listen', {
  address: Type.String({ minLength: 1, maxLength: 64 }),
  ttlMs: Type.Integer({ minimum: 100, maximum: 600_000 }),
});
export type ProbeListen = Type.Static<typeof ProbeListen>;

export const ProbeListening = message('probe.listening', {
  address: Type.String({ maxLength: 64 }),
  /** null when the address cannot be bound; `error` says why. */
  port: Type.Union([Type.Integer({ minimum: 1, maximum: 65535 }), Type.Null()]),
  error: Type.Optional(FailureDetail),
});
export type ProbeListening = Type.Static<typeof ProbeListening>;

export const ProbeTarget = Type.Object(
  {
    node: NodeName,
    address: Type.String({ minLength: 1, maxLength: 64 }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
  },
  { additionalProperties: false },
);
export type ProbeTarget = Type.Static<typeof ProbeTarget>;

/** controller → agent: connect to each target and time a few echoes. */
export const ProbeConnect = message('probe.connect', {
  targets: Type.Array(ProbeTarget, { maxItems: 4096 }),
  timeoutMs: Type.Integer({ minimum: 1, maximum: 60_000 }),
});
export type ProbeConnect = Type.Static<typeof ProbeConnect>;

export const ProbeOutcome = Type.Object(
  {
    node: NodeName,
    ok: Type.Boolean(),
    /** TCP handshake time. */
    connectMs: Type.Union([Millis, Type.Null()]),
    /** Median round trip of a small echo over the open connection. */
    rttMs: Type.Union([Millis, Type.Null()]),
    error: Type.Union([Type.String({ maxLength: 1024 }), Type.Null()]),
  },
  { additionalProperties: false },
);
export type ProbeOutcome = Type.Static<typeof ProbeOutcome>;

export const ProbeResult = message('probe.result', {
  results: Type.Array(ProbeOutcome, { maxItems: 4096 }),
});
export type ProbeResult = Type.Static<typeof ProbeResult>;

// ---- interactive PTY sessions ---------------------------------------------------------
//
// The session id is the `id` of every frame of the session. Output is flow-controlled by
// acknowledgements: the agent stops reading the terminal while too many of its bytes are
// unacknowledged, so a fast writer cannot pile memory up in the controller.

/** controller → agent: start a program (default: the user's login shell) on a new terminal. */
export const PtyOpen = message('pty.open', {
  argv: Type.Optional(Argv),
  cols: Cols,
  rows: Rows,
  term: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._+-]+$' }),
  user: Type.Optional(UserName),
  cwd: Type.Optional(Path),
});
export type PtyOpen = Type.Static<typeof PtyOpen>;

export const PtyOpened = message('pty.opened', { pid: Type.Integer({ minimum: 1 }) });
export type PtyOpened = Type.Static<typeof PtyOpened>;

/** controller → agent: keystrokes. */
export const PtyInput = message('pty.input', { data: Base64 });
export type PtyInput = Type.Static<typeof PtyInput>;

/** agent → controller: what the terminal printed. */
export const PtyOutput = message('pty.output', { data: Base64 });
export type PtyOutput = Type.Static<typeof PtyOutput>;

/** controller → agent: this many more output bytes reached the client. */
export const PtyAck = message('pty.ack', { bytes: Type.Integer({ minimum: 1 }) });
export type PtyAck = Type.Static<typeof PtyAck>;

export const PtyResize = message('pty.resize', { cols: Cols, rows: Rows });
export type PtyResize = Type.Static<typeof PtyResize>;

/** controller → agent: a signal for the session's process group. */
export const PtySignal = message('pty.signal', { signal: SignalName });
export type PtySignal = Type.Static<typeof PtySignal>;

/** controller → agent: the client is gone; hang the terminal up. */
export const PtyClose = message('pty.close', { reason: Type.String({ maxLength: 1024 }) });
export type PtyClose = Type.Static<typeof PtyClose>;

/** agent → controller: the session ended, after its last output. */
export const PtyExit = message('pty.exit', {
  code: Type.Union([Type.Integer(), Type.Null()]),
  signal: Type.Union([SignalName, Type.Null()]),
  /** Set when the program never started. */
  error: Type.Optional(FailureDetail),
});
export type PtyExit = Type.Static<typeof PtyExit>;
