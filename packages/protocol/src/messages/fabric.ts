// Fabric probes between agents, for `rankd check net`: one agent serves a probe, its peer
// measures against it, with the field's own tools (iperf3 over TCP; perftest's ib_write_bw
// and ib_write_lat over RDMA).
//
// The controller names a tool from a closed list and typed parameters (an IP literal, a
// port list, an RDMA device name, a GID index, whole seconds); the agent builds the argv
// itself from those fields. Nothing in these frames is run as a string.
import Type from 'typebox';
import { RequestId } from './fleet.js';

function message<const Name extends string, const P extends Type.TProperties>(type: Name, properties: P) {
  return Type.Object(
    { type: Type.Literal(type), id: RequestId, ...properties },
    { additionalProperties: false, $id: type },
  );
}

/** The probe programs an agent may start; each has a fixed argv shape (agent/src/fabric/tools.ts). */
export const FabricTool = Type.Union([
  Type.Literal('iperf3'),
  Type.Literal('ib_write_bw'),
  Type.Literal('ib_write_lat'),
]);
export type FabricTool = Type.Static<typeof FabricTool>;

/** An IPv4 or IPv6 literal: never a host name, so no resolver is consulted and no option is smuggled in. */
export const IpLiteral = Type.String({ minLength: 2, maxLength: 45, pattern: '^[0-9A-Fa-f.:]+$' });
/** A kernel RDMA device name (mlx5_0, irdma-cvl01tf2, rxe0). */
export const RdmaDeviceName = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
export const ProbePort = Type.Integer({ minimum: 1024, maximum: 65535 });
const FailureDetail = Type.Object(
  { code: Type.String({ maxLength: 64 }), message: Type.String({ maxLength: 4096 }) },
  { additionalProperties: false },
);

const ToolParameters = {
  tool: FabricTool,
  /** RDMA tools only: the device and GID index the planner gives a rank on this node. */
  device: Type.Optional(RdmaDeviceName),
  gidIndex: Type.Optional(Type.Integer({ minimum: 0, maximum: 255 })),
  /** RDMA tools only: the device's port the planner gives a rank (perftest -i; it defaults to 1). */
  ibPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 255 })),
  /** Whole seconds of traffic (iperf3 -t, ib_write_bw -D). */
  durationS: Type.Integer({ minimum: 1, maximum: 600 }),
};

/**
 * controller → agent: start the serving side of one probe on `address`, on the first of
 * `ports` that is free. It ends after one client, or after `ttlMs`, or at fabric.stop.
 */
export const FabricServe = message('fabric.serve', {
  ...ToolParameters,
  address: IpLiteral,
  ports: Type.Array(ProbePort, { minItems: 1, maxItems: 16 }),
  ttlMs: Type.Integer({ minimum: 1000, maximum: 900_000 }),
});
export type FabricServe = Type.Static<typeof FabricServe>;

/** agent → controller: the server listens on `port`, or could not start (`error`). */
export const FabricServing = message('fabric.serving', {
  port: Type.Union([ProbePort, Type.Null()]),
  error: Type.Optional(FailureDetail),
});
export type FabricServing = Type.Static<typeof FabricServing>;

/** controller → agent: end the server of fabric.serve `id` now, if it still runs. */
export const FabricStop = message('fabric.stop', {});
export type FabricStop = Type.Static<typeof FabricStop>;

/**
 * controller → agent: run the client side against a peer's server. Both directions are
 * measured in one run (iperf3 --bidir, ib_write_bw -b); the client is ended at `timeoutMs`.
 */
export const FabricMeasure = message('fabric.measure', {
  ...ToolParameters,
  /** The peer's server. */
  address: IpLiteral,
  port: ProbePort,
  /** The address to send from: the rail's own address on this node. */
  bind: Type.Optional(IpLiteral),
  timeoutMs: Type.Integer({ minimum: 1000, maximum: 900_000 }),
});
export type FabricMeasure = Type.Static<typeof FabricMeasure>;

const BitsPerSecond = Type.Union([Type.Number({ minimum: 0 }), Type.Null()]);

/** agent → controller: what one probe measured, or why it could not. */
export const FabricMeasured = message('fabric.measured', {
  /** Client → server, as the server received it. */
  forwardBps: BitsPerSecond,
  /** Server → client, as the client received it. */
  reverseBps: BitsPerSecond,
  /**
   * One-way latency in microseconds: ib_write_lat's typical latency, or over TCP half the
   * smallest round trip the kernel measured during the run (iperf3's min_rtt).
   */
  latencyUs: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
  durationMs: Type.Number({ minimum: 0 }),
  timedOut: Type.Boolean(),
  error: Type.Optional(FailureDetail),
});
export type FabricMeasured = Type.Static<typeof FabricMeasured>;
