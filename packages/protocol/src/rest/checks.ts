// REST schemas of fabric checks: `rankd check net` (a pairwise bandwidth and latency matrix
// measured by the agents) and `rankd check allreduce` (a collective sweep run as a job).
// Every check is stored with its time and read back with GET /v1/checks.
import Type from 'typebox';
import { Nullable } from '../nullable.js';
import {
  ALLREDUCE_BYTES,
  ALLREDUCE_ITERATIONS,
  ALLREDUCE_TIMEOUT_S,
  NET_CHECK_DURATION_S,
  NET_CHECK_THRESHOLD,
  schemaBounds,
} from '../limits.js';
import { PlacementSpec } from '../plan.js';

const Pattern = Type.String({ minLength: 1, maxLength: 4096 });
/** ms since the epoch */
const Time = Type.Integer({ minimum: 0 });

export const CheckKind = Type.Union([Type.Literal('net'), Type.Literal('allreduce')]);
export type CheckKind = Type.Static<typeof CheckKind>;

export const NetCheckRequest = Type.Object(
  {
    /** Host pattern (default "all"). */
    pattern: Type.Optional(Pattern),
    /**
     * The NIC to measure on every node: an RDMA device (mlx5_0) or a netdev (eth1). Default:
     * what the planner gives a rank (the RDMA devices with an active port, else TCP over the
     * node's rank address).
     */
    rail: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]*$' })),
    /** Seconds of traffic per probe. */
    duration: Type.Optional(Type.Integer({ minimum: NET_CHECK_DURATION_S.min, maximum: NET_CHECK_DURATION_S.max })),
    threshold: Type.Optional(Type.Number({ minimum: NET_CHECK_THRESHOLD.min, maximum: NET_CHECK_THRESHOLD.max })),
    /** Drain every flagged node, with the finding as the reason. */
    drain: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type NetCheckRequest = Type.Static<typeof NetCheckRequest>;

export const RailKind = Type.Union([Type.Literal('tcp'), Type.Literal('rdma')]);
export type RailKind = Type.Static<typeof RailKind>;

export const RailSummary = Type.Object({
  /** The RDMA device, the netdev named by --rail, or "tcp" for the nodes' rank addresses. */
  name: Type.String(),
  kind: RailKind,
  /** What measured it: iperf3, or ib_write_bw and ib_write_lat. */
  tools: Type.Array(Type.String()),
  /** Median over every measured direction of every link of the rail, bits per second. */
  medianBps: Nullable(Type.Number()),
  /** Links below this are flagged. */
  thresholdBps: Nullable(Type.Number()),
  medianLatencyUs: Nullable(Type.Number()),
});
export type RailSummary = Type.Static<typeof RailSummary>;

/** One direction of one link, as one probe of the schedule measured it. */
export const LinkResult = Type.Object({
  rail: Type.String(),
  src: Type.String(),
  dst: Type.String(),
  /** 0-based round of the schedule; the probe ran from startedAt to endedAt. */
  round: Type.Integer({ minimum: 0 }),
  startedAt: Time,
  endedAt: Time,
  bandwidthBps: Nullable(Type.Number()),
  /** One-way, microseconds. */
  latencyUs: Nullable(Type.Number()),
  /** Why the probe failed; null when it measured. */
  error: Nullable(Type.String()),
  flagged: Type.Boolean(),
  /** Why it is flagged ("190 Mbit/s, 2% of the rail median 9.4 Gbit/s", or the error). */
  why: Nullable(Type.String()),
});
export type LinkResult = Type.Static<typeof LinkResult>;

export const Spread = Type.Object({ min: Type.Number(), median: Type.Number(), max: Type.Number() });
export type Spread = Type.Static<typeof Spread>;

export const NodeVerdictKind = Type.Union([Type.Literal('ok'), Type.Literal('flagged'), Type.Literal('unreachable')]);
export type NodeVerdictKind = Type.Static<typeof NodeVerdictKind>;

export const NodeVerdict = Type.Object({
  node: Type.String(),
  verdict: NodeVerdictKind,
  /** Why it is flagged or unreachable; for an ok node with slow links, which peer explains them. */
  reason: Nullable(Type.String()),
  /** Over every measured direction to and from the node, bits per second. */
  bandwidth: Nullable(Spread),
  latencyUs: Nullable(Spread),
});
export type NodeVerdict = Type.Static<typeof NodeVerdict>;

export const NetCheckResult = Type.Object({
  id: Type.String(),
  kind: Type.Literal('net'),
  startedAt: Time,
  endedAt: Time,
  /** The user who ran it; null for the controller's own (a job's preflight). */
  by: Nullable(Type.String()),
  pattern: Type.String(),
  durationS: Type.Integer(),
  threshold: Type.Number(),
  /** Rounds the schedule had: N−1 for even N, N for odd N (the circle method). */
  rounds: Type.Integer({ minimum: 0 }),
  /** Rounds that ran: fewer for a preflight, which runs one (and a recheck round of its suspects). */
  roundsRun: Type.Integer({ minimum: 0 }),
  rails: Type.Array(RailSummary),
  nodes: Type.Array(NodeVerdict),
  links: Type.Array(LinkResult),
  /** Nodes whose verdict is not ok. */
  flagged: Type.Array(Type.String()),
  /** Flagged nodes that --drain drained. */
  drained: Type.Array(Type.String()),
  /** Set when there was nothing to measure (one node selected). */
  message: Nullable(Type.String()),
});
export type NetCheckResult = Type.Static<typeof NetCheckResult>;

/** `rankd check allreduce`: a collective sweep run as a job, placed as the placement says. */
export const AllreduceCheckRequest = Type.Object(
  {
    /** Where the sweep's ranks go: `rankd run`'s placement flags (its env included). */
    placement: PlacementSpec,
    /** Message sizes double from minBytes to maxBytes (nccl-tests' -b, -e, -f 2). */
    minBytes: Type.Optional(Type.Integer({ minimum: ALLREDUCE_BYTES.min, maximum: ALLREDUCE_BYTES.max })),
    maxBytes: Type.Optional(Type.Integer({ minimum: ALLREDUCE_BYTES.min, maximum: ALLREDUCE_BYTES.max })),
    /** Timed iterations per size (nccl-tests' -n). */
    iterations: Type.Optional(Type.Integer({ minimum: ALLREDUCE_ITERATIONS.min, maximum: ALLREDUCE_ITERATIONS.max })),
    /** Seconds until the sweep's job is ended as timed-out; default from the sizes. */
    timeout: Type.Optional(Type.Integer(schemaBounds(ALLREDUCE_TIMEOUT_S))),
  },
  { additionalProperties: false },
);
export type AllreduceCheckRequest = Type.Static<typeof AllreduceCheckRequest>;

/** One size of the sweep, as nccl-tests prints it (out-of-place). */
export const AllreduceRow = Type.Object({
  bytes: Type.Integer({ minimum: 0 }),
  /** Elements of the reduced type. */
  count: Type.Integer({ minimum: 0 }),
  type: Type.String(),
  timeUs: Type.Number(),
  /** GB/s (10^9 bytes), as nccl-tests: algbw = bytes / time. */
  algbwGBs: Type.Number(),
  /** algbw × 2(n−1)/n. */
  busbwGBs: Type.Number(),
  /** Elements whose sum was wrong, out-of-place and in-place together. */
  wrong: Type.Integer({ minimum: 0 }),
});
export type AllreduceRow = Type.Static<typeof AllreduceRow>;

export const AllreduceCheckResult = Type.Object({
  id: Type.String(),
  kind: Type.Literal('allreduce'),
  startedAt: Time,
  endedAt: Time,
  by: Nullable(Type.String()),
  /** The nodes the job ran on, comma-separated. */
  pattern: Type.String(),
  /** The job that ran the sweep: its rank map and logs stay readable. */
  jobId: Type.String(),
  ranks: Type.Integer({ minimum: 0 }),
  nodes: Type.Array(Type.String()),
  /** What ran: null when the job failed before it said (the launcher's first line). */
  implementation: Nullable(Type.Union([Type.Literal('nccl-tests'), Type.Literal('rankd-mpi')])),
  /** The transport variables the planner wrote (NCCL_IB_HCA, NCCL_IB_GID_INDEX, UCX_NET_DEVICES, …). */
  env: Type.Record(Type.String(), Type.String()),
  rows: Type.Array(AllreduceRow),
  /** Sum of wrong elements over every size: anything but 0 is a broken fabric or library. */
  wrong: Type.Integer({ minimum: 0 }),
  /** Nodes flagged by the sweep (every node of a sweep with wrong results or a failed job). */
  flagged: Type.Array(Type.String()),
  /** Why the sweep has no rows (the job failed), or null. */
  message: Nullable(Type.String()),
});
export type AllreduceCheckResult = Type.Static<typeof AllreduceCheckResult>;

/** Any stored check, whole: GET /v1/checks/:id. */
export const CheckResult = Type.Union([NetCheckResult, AllreduceCheckResult]);
export type CheckResult = Type.Static<typeof CheckResult>;

export const CheckSummary = Type.Object({
  id: Type.String(),
  kind: CheckKind,
  startedAt: Time,
  endedAt: Time,
  by: Nullable(Type.String()),
  pattern: Type.String(),
  nodes: Type.Integer({ minimum: 0 }),
  flagged: Type.Array(Type.String()),
});
export type CheckSummary = Type.Static<typeof CheckSummary>;

export const CheckListQuery = Type.Object(
  {
    kind: Type.Optional(CheckKind),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
);
export type CheckListQuery = Type.Static<typeof CheckListQuery>;

export const CheckList = Type.Object({ checks: Type.Array(CheckSummary) });
export type CheckList = Type.Static<typeof CheckList>;

export const CheckParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }) },
  { additionalProperties: false },
);
export type CheckParams = Type.Static<typeof CheckParams>;
