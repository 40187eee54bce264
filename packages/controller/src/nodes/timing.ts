// How the controller judges liveness. The agent is told heartbeatMs in its welcome;
// everything else is the controller's own business.
export interface FleetTiming {
  /** Interval the agents heartbeat at. */
  heartbeatMs: number;
  /** Without a heartbeat for this long a node becomes unreachable. */
  ttlMs: number;
  /** Without a heartbeat for this long a node becomes lost, and its ranks are written off. */
  lostAfterMs: number;
  /** After a controller start, known nodes get this long to reconnect before any is judged. */
  restartGraceMs: number;
}

export const defaultFleetTiming: FleetTiming = {
  heartbeatMs: 5_000,
  ttlMs: 15_000,
  lostAfterMs: 60_000,
  restartGraceMs: 30_000,
};

/** Derives a consistent timing from a heartbeat interval (used by tests and small clusters). */
export function fleetTimingFromHeartbeat(heartbeatMs: number): FleetTiming {
  return { heartbeatMs, ttlMs: heartbeatMs * 3, lostAfterMs: heartbeatMs * 12, restartGraceMs: heartbeatMs * 6 };
}
