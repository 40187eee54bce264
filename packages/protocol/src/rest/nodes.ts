// REST views of the node registry.
import Type from 'typebox';
import { Labels, NodeName } from '../messages/session.js';
import { DRAIN_REASON_CHARS, schemaLength } from '../limits.js';
import { Nullable } from '../nullable.js';

export const NodeState = Type.Union([
  /** Connected and heartbeating. */
  Type.Literal('ready'),
  /** Heartbeats missed past the TTL. */
  Type.Literal('unreachable'),
  /** Unreachable past the lost deadline; its ranks are presumed gone. */
  Type.Literal('lost'),
]);
export type NodeState = Type.Static<typeof NodeState>;

/** A drained node takes no new ranks; those running finish (Slurm's `scontrol update state=drain`). */
export const NodeDrain = Type.Object({
  reason: Type.String(),
  /** Who drained it: a user name (null when no user did). */
  by: Nullable(Type.String()),
  at: Type.String({ description: 'ISO 8601' }),
});
export type NodeDrain = Type.Static<typeof NodeDrain>;

export const NodeDrainBody = Type.Object(
  { reason: Type.Optional(Type.String(schemaLength(DRAIN_REASON_CHARS))) },
  { additionalProperties: false },
);
export type NodeDrainBody = Type.Static<typeof NodeDrainBody>;

/** A node's hardware at a glance, from its last facts: what a fleet table shows. */
export const HardwareSummary = Type.Object({
  packages: Type.Integer(),
  numaNodes: Type.Integer(),
  cores: Type.Integer(),
  pus: Type.Integer(),
  memoryBytes: Nullable(Type.Integer()),
  /**
   * The memory cgroup's limit on the agent and its ranks (a Slurm job's, a pod's); null for
   * none. Absent when the agent did not say (an older agent, an unreadable cgroup).
   */
  memoryLimitBytes: Type.Optional(Nullable(Type.Integer())),
  /** Every GPU on the node's PCI bus. */
  gpus: Type.Integer(),
  /** Those the agent was granted (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES); absent from older controllers. */
  gpusAllowed: Type.Optional(Type.Integer()),
  /** Physical network interfaces (virtual ones left out). */
  nics: Type.Integer(),
  rdmaPorts: Type.Integer(),
  rdmaPortsActive: Type.Integer(),
  /** Warnings the facts carry (unreadable files and the like). */
  warnings: Type.Integer(),
});
export type HardwareSummary = Type.Static<typeof HardwareSummary>;

export const NodeView = Type.Object({
  name: NodeName,
  state: NodeState,
  address: Type.Union([Type.String(), Type.Null()]),
  labels: Labels,
  version: Type.Union([Type.String(), Type.Null()]),
  /** Whether the agent holds a live connection now (false for a known node inside the restart grace period). */
  connected: Type.Boolean(),
  capabilities: Type.Array(Type.String()),
  /** Allowed CPUs / NUMA nodes from the last facts; null before any facts. */
  cpus: Type.Union([Type.Integer(), Type.Null()]),
  numaNodes: Type.Union([Type.Integer(), Type.Null()]),
  firstSeen: Type.String({ description: 'ISO 8601' }),
  lastSeen: Type.String({ description: 'ISO 8601' }),
  stateReason: Type.String(),
  /** Set while the node is drained: the planner places no new rank on it. */
  drain: Nullable(NodeDrain),
  /** From its last facts; null before any. Given by GET /v1/nodes and /v1/nodes/:name. */
  hardware: Type.Optional(Nullable(HardwareSummary)),
  /** Ranks of live jobs running on it now. Given by GET /v1/nodes and /v1/nodes/:name. */
  ranksRunning: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type NodeView = Type.Static<typeof NodeView>;

export const NodeList = Type.Object({ nodes: Type.Array(NodeView) });
export type NodeList = Type.Static<typeof NodeList>;

export const NodeParams = Type.Object({ name: Type.String({ maxLength: 253 }) });
export type NodeParams = Type.Static<typeof NodeParams>;
