// REST schemas of fleet operations: the inventory, host patterns, ad-hoc exec, ping,
// the preflight doctor, and the client side of interactive shells.
import Type from 'typebox';
import { EXEC_TIMEOUT_SECONDS, PROBE_TIMEOUT_SECONDS, schemaBounds } from '../limits.js';
import { Nullable } from '../nullable.js';
import { EnvVars, MAX_EXEC_OUTPUT_BYTES } from '../messages/fleet.js';
import { SignalName } from '../messages/jobs.js';

const Vars = Type.Record(Type.String(), Type.String());
const Pattern = Type.String({ minLength: 1, maxLength: 4096 });
const Failure = Type.Object({ code: Type.String(), message: Type.String() });

// ---- inventory --------------------------------------------------------------------------

export const InventoryFormat = Type.Union([Type.Literal('ini'), Type.Literal('hostfile')]);
export type InventoryFormat = Type.Static<typeof InventoryFormat>;

export const InventoryImport = Type.Object(
  {
    /** The file's text. */
    content: Type.String({ maxLength: 900_000 }),
    /** Detected from the content when absent. */
    format: Type.Optional(InventoryFormat),
    /** The file name, for error messages ("hosts.ini:7: …"). */
    source: Type.Optional(Type.String({ maxLength: 1024 })),
    /** The group a hostfile's hosts join (default "hostfile"); INI files name their own. */
    group: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.-]+$' })),
    /** Add to the stored inventory instead of replacing it. */
    merge: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type InventoryImport = Type.Static<typeof InventoryImport>;

/** Where a host stands: its agent's registry state, or "none" when no agent has registered for it. */
export const AgentPresence = Type.Union([
  Type.Literal('ready'),
  Type.Literal('unreachable'),
  Type.Literal('lost'),
  Type.Literal('none'),
]);
export type AgentPresence = Type.Static<typeof AgentPresence>;

export const InventoryGroupView = Type.Object({
  name: Type.String(),
  /** Hosts listed under the group itself. */
  hosts: Type.Array(Type.String()),
  children: Type.Array(Type.String()),
  vars: Vars,
  /** Every host of the group and of its descendants. */
  members: Type.Array(Type.String()),
});
export type InventoryGroupView = Type.Static<typeof InventoryGroupView>;

export const InventoryHostView = Type.Object({
  name: Type.String(),
  /** The registered node this host is, or null when no agent is known for it. */
  node: Nullable(Type.String()),
  agent: AgentPresence,
  /** Every group the host is in, directly or through children ("all" left out). */
  groups: Type.Array(Type.String()),
  /** Effective vars: all, then groups from parent to child, then the host's own. */
  vars: Vars,
});
export type InventoryHostView = Type.Static<typeof InventoryHostView>;

export const InventoryView = Type.Object({
  source: Nullable(Type.Object({ name: Type.String(), format: InventoryFormat, importedAt: Type.String() })),
  groups: Type.Array(InventoryGroupView),
  hosts: Type.Array(InventoryHostView),
  /** Registered nodes that the inventory does not name (patterns still reach them by name). */
  unlisted: Type.Array(Type.String()),
});
export type InventoryView = Type.Static<typeof InventoryView>;

export const PatternQuery = Type.Object({ pattern: Pattern }, { additionalProperties: false });
export type PatternQuery = Type.Static<typeof PatternQuery>;

export const MatchedHost = Type.Object({ host: Type.String(), node: Nullable(Type.String()), agent: AgentPresence });
export type MatchedHost = Type.Static<typeof MatchedHost>;

export const PatternMatch = Type.Object({ pattern: Type.String(), hosts: Type.Array(MatchedHost) });
export type PatternMatch = Type.Static<typeof PatternMatch>;

// ---- exec -------------------------------------------------------------------------------

export const ExecRequest = Type.Object(
  {
    pattern: Pattern,
    /** argv: the program and its arguments. Give this or `shell`. */
    command: Type.Optional(Type.Array(Type.String({ maxLength: 65536 }), { minItems: 1, maxItems: 4096 })),
    /** A shell string for /bin/sh -c: the explicit opt-in for pipes and globs. */
    shell: Type.Optional(Type.String({ minLength: 1, maxLength: 65536 })),
    /** Seconds until the command is ended on a host (default 300). */
    timeout: Type.Optional(Type.Number(schemaBounds(EXEC_TIMEOUT_SECONDS))),
    user: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    cwd: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    env: Type.Optional(EnvVars),
    /** Bytes of output kept per stream and host (default 64 KiB). */
    maxOutputBytes: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_EXEC_OUTPUT_BYTES })),
  },
  { additionalProperties: false },
);
export type ExecRequest = Type.Static<typeof ExecRequest>;

export const HostStatus = Type.Union([Type.Literal('SUCCESS'), Type.Literal('FAILED'), Type.Literal('UNREACHABLE')]);
export type HostStatus = Type.Static<typeof HostStatus>;

export const ExecHostResult = Type.Object({
  host: Type.String(),
  node: Nullable(Type.String()),
  status: HostStatus,
  rc: Nullable(Type.Integer()),
  signal: Nullable(SignalName),
  /** The kept bytes as UTF-8 text. */
  stdout: Type.String(),
  stderr: Type.String(),
  /** Bytes the command wrote, kept or not. */
  stdoutBytes: Type.Integer(),
  stderrBytes: Type.Integer(),
  truncated: Type.Object({ stdout: Type.Boolean(), stderr: Type.Boolean() }),
  durationMs: Nullable(Type.Number()),
  timedOut: Type.Boolean(),
  error: Nullable(Failure),
});
export type ExecHostResult = Type.Static<typeof ExecHostResult>;

export const HostSummary = Type.Object({
  success: Type.Integer(),
  failed: Type.Integer(),
  unreachable: Type.Integer(),
});
export type HostSummary = Type.Static<typeof HostSummary>;

export const ExecReport = Type.Object({
  pattern: Type.String(),
  argv: Type.Array(Type.String()),
  hosts: Type.Array(ExecHostResult),
  summary: HostSummary,
  durationMs: Type.Number(),
  /**
   * Set when the credential that started the exec was revoked while it ran
   * (RANKD_CREDENTIAL_REVOKED): the commands still running were ended on their nodes, and
   * those hosts are FAILED with this same error. Hosts that had finished keep their results.
   */
  revoked: Type.Optional(Failure),
});
export type ExecReport = Type.Static<typeof ExecReport>;

// ---- ping -------------------------------------------------------------------------------

export const PingRequest = Type.Object(
  { pattern: Pattern, timeout: Type.Optional(Type.Number(schemaBounds(PROBE_TIMEOUT_SECONDS))) },
  { additionalProperties: false },
);
export type PingRequest = Type.Static<typeof PingRequest>;

export const PingHostResult = Type.Object({
  host: Type.String(),
  node: Nullable(Type.String()),
  status: Type.Union([Type.Literal('SUCCESS'), Type.Literal('UNREACHABLE')]),
  /** The round trip controller → agent → controller. */
  latencyMs: Nullable(Type.Number()),
  error: Nullable(Failure),
});
export type PingHostResult = Type.Static<typeof PingHostResult>;

export const PingReport = Type.Object({
  pattern: Type.String(),
  hosts: Type.Array(PingHostResult),
  summary: HostSummary,
});
export type PingReport = Type.Static<typeof PingReport>;

// ---- doctor -----------------------------------------------------------------------------

export const DoctorRequest = Type.Object(
  {
    /** Default "all". */
    pattern: Type.Optional(Pattern),
    /** Paths every node must have (the model directory on NFS, a venv, …). */
    requirePaths: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), { maxItems: 256 })),
    /** Probe TCP between every pair of nodes and return the connection matrix. */
    matrix: Type.Optional(Type.Boolean()),
    /** The netdev ranks will use; its IPv4 address is probed (default: the node's registered address). */
    iface: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    /** Seconds to wait for each agent (default 10). */
    timeout: Type.Optional(Type.Number(schemaBounds(PROBE_TIMEOUT_SECONDS))),
  },
  { additionalProperties: false },
);
export type DoctorRequest = Type.Static<typeof DoctorRequest>;

export const CheckStatus = Type.Union([Type.Literal('PASS'), Type.Literal('WARN'), Type.Literal('FAIL')]);
export type CheckStatus = Type.Static<typeof CheckStatus>;

export const DoctorCheck = Type.Object({
  /** null for a check about the nodes together (clock skew between them). */
  node: Nullable(Type.String()),
  /** Stable id: memlock, rdma.port, rdma.gid, rdma.numa, same.kernel, same.rdma, same.fabric, same.cpu, clock, memory.numa, numactl, launcher, path, reach. */
  check: Type.String(),
  status: CheckStatus,
  message: Type.String(),
  /** One line that fixes it; null on PASS. */
  fix: Nullable(Type.String()),
});
export type DoctorCheck = Type.Static<typeof DoctorCheck>;

export const MatrixCell = Type.Object({
  ok: Type.Boolean(),
  connectMs: Nullable(Type.Number()),
  rttMs: Nullable(Type.Number()),
  error: Nullable(Type.String()),
});
export type MatrixCell = Type.Static<typeof MatrixCell>;

export const ReachMatrix = Type.Object({
  /** Row i is what nodes[i] saw when it connected to each column. */
  nodes: Type.Array(Type.String()),
  addresses: Type.Array(Nullable(Type.String())),
  /** null on the diagonal and where a side could not take part. */
  cells: Type.Array(Type.Array(Nullable(MatrixCell))),
});
export type ReachMatrix = Type.Static<typeof ReachMatrix>;

export const DoctorNode = Type.Object({
  host: Type.String(),
  node: Nullable(Type.String()),
  reachable: Type.Boolean(),
  /** Agent clock minus controller clock, ms; null when not measured. */
  clockOffsetMs: Nullable(Type.Number()),
  error: Nullable(Failure),
});
export type DoctorNode = Type.Static<typeof DoctorNode>;

export const DoctorResult = Type.Object({
  pattern: Type.String(),
  nodes: Type.Array(DoctorNode),
  checks: Type.Array(DoctorCheck),
  matrix: Nullable(ReachMatrix),
  summary: Type.Object({ pass: Type.Integer(), warn: Type.Integer(), fail: Type.Integer() }),
});
export type DoctorResult = Type.Static<typeof DoctorResult>;

// ---- interactive shells -----------------------------------------------------------------
//
// `GET /v1/shell?node=N&cols=C&rows=R[&term=T][&user=U][&cwd=D][&arg=…]` upgrades to a
// WebSocket with the API token in the Authorization header and subprotocol
// rankd.shell.v1. Binary frames carry terminal bytes both ways; text frames carry the
// JSON control messages below.

export { SHELL_PATH, SHELL_SUBPROTOCOL } from '../shell-path.js';

/** client → controller. */
export const ShellControl = Type.Union([
  Type.Object(
    {
      type: Type.Literal('resize'),
      cols: Type.Integer({ minimum: 1, maximum: 10_000 }),
      rows: Type.Integer({ minimum: 1, maximum: 10_000 }),
    },
    { additionalProperties: false },
  ),
  Type.Object({ type: Type.Literal('signal'), signal: SignalName }, { additionalProperties: false }),
]);
export type ShellControl = Type.Static<typeof ShellControl>;

/** controller → client. */
export const ShellEvent = Type.Union([
  Type.Object({ type: Type.Literal('started'), node: Type.String(), pid: Type.Integer() }),
  Type.Object({ type: Type.Literal('exit'), code: Nullable(Type.Integer()), signal: Nullable(Type.String()) }),
  Type.Object({ type: Type.Literal('error'), code: Type.String(), message: Type.String() }),
]);
export type ShellEvent = Type.Static<typeof ShellEvent>;
