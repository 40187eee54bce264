// The transport environment a sweep ran with: the variables the planner writes for NCCL,
// UCX, oneCCL, libfabric and PSM3 (and what --env set among them), as rank 0 had them.
// The rank's identity (CCL_LOCAL_RANK, …) is left out: it is wiring, not transport.
const TRANSPORT_PREFIXES = ['NCCL_', 'UCX_', 'CCL_', 'FI_', 'PSM3_', 'GLOO_SOCKET_'];
const RANK_WIRING = new Set(['CCL_LOCAL_RANK', 'CCL_LOCAL_SIZE', 'CCL_PROCESS_LAUNCHER']);

export function transportEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(env).sort()) {
    if (RANK_WIRING.has(name) || !TRANSPORT_PREFIXES.some((p) => name.startsWith(p))) continue;
    out[name] = env[name]!;
  }
  return out;
}
