// `ibv_devices` (rdma-core) from facts:
//
//       device          	   node GUID
//       ------          	----------------
//       mlx5_0          	b8599f0300d4e0a2
import type { Facts } from '@rankd/protocol';

export function renderIbvDevices(facts: Facts): string {
  let out = `    ${'device'.padEnd(16)}\t   node GUID\n`;
  out += `    ${'------'.padEnd(16)}\t----------------\n`;
  for (const d of facts.rdma.devices) out += `    ${d.name.padEnd(16)}\t${d.nodeGuid ?? '0000000000000000'}\n`;
  return out;
}
