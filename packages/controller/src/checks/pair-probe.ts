// One probe of a net check: node b serves, node a measures against it, both directions in
// one run. Over RDMA the bandwidth run is followed by a latency run on the same pair. The
// controller offers the ports and ends the server when the probe is over, whatever happened.
import { FleetErrorCode, RankdError, type FabricMeasured, type FabricServing, type FabricTool } from '@rankd/protocol';
import { AgentRequests } from '../fleet/exec/agent-requests.js';
import { failureOf } from '../fleet/exec/targets.js';
import type { RailInfo } from './link-analysis.js';
import type { RailEndpoint } from './rails.js';

/** A probe past its duration by this much is ended by its agent. */
export const PROBE_MARGIN_MS = 4000;
/** ib_write_lat runs a fixed number of iterations; this bounds it whatever the fabric. */
const LATENCY_RUN_S = 2;
/** A reply is awaited this long past the agent's own deadline. */
const REPLY_MARGIN_MS = 3000;
/** The serving agent tries each offered port for up to 3 s. */
const SERVE_WAIT_MS = 3000;

export interface PairEnd {
  node: string;
  endpoint: RailEndpoint;
}

export interface PairMeasurement {
  forwardBps: number | null;
  reverseBps: number | null;
  latencyUs: number | null;
  error: string | null;
  /** A node whose agent could not be reached: it sits out the rest of the check. */
  unreachable: string | null;
  /** A node that cannot serve or measure at all (the tool is missing): the same. */
  broken: { node: string; reason: string } | null;
}

export type PairProber = (rail: RailInfo, a: PairEnd, b: PairEnd, durationS: number) => Promise<PairMeasurement>;

/**
 * Ports offered to probe servers: a window that moves on at every probe, so that a port
 * still in TIME_WAIT from the last round is not the first one tried.
 */
export class PortOffer {
  private next = 0;
  constructor(
    private readonly first = 29600,
    private readonly count = 400,
    private readonly perProbe = 8,
  ) {}

  take(): number[] {
    const ports = Array.from({ length: this.perProbe }, (_, i) => this.first + ((this.next + i) % this.count));
    this.next = (this.next + this.perProbe) % this.count;
    return ports;
  }
}

export function agentProber(requests: AgentRequests, ports: PortOffer): PairProber {
  return async (rail, a, b, durationS) => {
    if (rail.kind === 'tcp') return runTool(requests, ports, 'iperf3', a, b, durationS);
    const bw = await runTool(requests, ports, 'ib_write_bw', a, b, durationS);
    if (bw.error !== null) return bw;
    const lat = await runTool(requests, ports, 'ib_write_lat', a, b, LATENCY_RUN_S);
    return { ...bw, latencyUs: lat.latencyUs, error: lat.error, unreachable: lat.unreachable, broken: lat.broken };
  };
}

async function runTool(
  requests: AgentRequests,
  ports: PortOffer,
  tool: FabricTool,
  a: PairEnd,
  b: PairEnd,
  durationS: number,
): Promise<PairMeasurement> {
  const none = { forwardBps: null, reverseBps: null, latencyUs: null, unreachable: null, broken: null };
  const rdma = (e: RailEndpoint) => ({
    ...(e.device !== undefined ? { device: e.device } : {}),
    ...(e.ibPort !== undefined ? { ibPort: e.ibPort } : {}),
    ...(e.gidIndex !== undefined ? { gidIndex: e.gidIndex } : {}),
  });
  const timeoutMs = durationS * 1000 + PROBE_MARGIN_MS;
  const offered = ports.take();
  let serving: FabricServing;
  const serveId = AgentRequests.newId();
  try {
    serving = await requests.request<FabricServing & { type: string }>(
      b.node,
      {
        type: 'fabric.serve',
        tool,
        ...rdma(b.endpoint),
        durationS,
        address: b.endpoint.address,
        ports: offered,
        // the server outlives the client's deadline by a little, then ends by itself
        ttlMs: timeoutMs + REPLY_MARGIN_MS,
      },
      'fabric.serving',
      SERVE_WAIT_MS * offered.length + REPLY_MARGIN_MS,
      serveId,
    );
  } catch (err) {
    // a late server would otherwise run until its ttl
    stopServer(requests, b.node, serveId);
    return { ...none, error: failureOf(err).message, unreachable: unreachableNode(err, b.node) };
  }
  if (serving.port === null) {
    const message = `${b.node} could not serve ${tool}: ${serving.error?.message ?? 'unknown error'}`;
    const broken = serving.error?.code === 'RANKD_PROBE_TOOL_MISSING' ? { node: b.node, reason: message } : null;
    return { ...none, error: message, broken };
  }
  try {
    const measured = await requests.request<FabricMeasured & { type: string }>(
      a.node,
      {
        type: 'fabric.measure',
        tool,
        ...rdma(a.endpoint),
        durationS,
        address: b.endpoint.address,
        port: serving.port,
        bind: a.endpoint.address,
        timeoutMs,
      },
      'fabric.measured',
      timeoutMs + REPLY_MARGIN_MS,
    );
    if (measured.error) {
      const message = `${a.node} → ${b.node}: ${measured.error.message}`;
      const broken = measured.error.code === 'RANKD_PROBE_TOOL_MISSING' ? { node: a.node, reason: message } : null;
      return { ...none, error: message, broken };
    }
    return {
      ...none,
      forwardBps: measured.forwardBps,
      reverseBps: measured.reverseBps,
      latencyUs: measured.latencyUs,
      error: null,
    };
  } catch (err) {
    return { ...none, error: failureOf(err).message, unreachable: unreachableNode(err, a.node) };
  } finally {
    stopServer(requests, b.node, serveId);
  }
}

/** Ends the server whatever the probe did: a client that never came must not leave it running. */
function stopServer(requests: AgentRequests, node: string, id: string): void {
  requests.notify(node, { type: 'fabric.stop', id });
}

function unreachableNode(err: unknown, node: string): string | null {
  return err instanceof RankdError && err.code === FleetErrorCode.AgentUnreachable ? node : null;
}
