// Where the ranks meet: MASTER_ADDR is rank 0's node, MASTER_PORT is given or picked.
// The planner stays deterministic: picking a free port is I/O, so the caller injects it.
import type { Facts } from '@rankd/protocol';

/** torch.distributed's customary port, used when nobody picks one. */
export const DEFAULT_MASTER_PORT = 29500;

export type PortPicker = (masterNode: string) => number;

export interface Rendezvous {
  masterAddr: string;
  masterPort: number;
  /** Set when the node had no address and its name stands in. */
  note: string | null;
}

export function rendezvous(
  node: { name: string; address: string | null },
  masterPort: number | undefined,
  pickPort?: PortPicker,
): Rendezvous {
  const port = masterPort ?? pickPort?.(node.name) ?? DEFAULT_MASTER_PORT;
  if (node.address) return { masterAddr: node.address, masterPort: port, note: null };
  return {
    masterAddr: node.name,
    masterPort: port,
    note: `node ${node.name} has no known address: MASTER_ADDR is its name`,
  };
}

/** The interface that holds the node's address: the one ranks should bootstrap over. */
export function socketInterface(facts: Facts, address: string | null): string | null {
  if (!address) return null;
  for (const nic of facts.nics) {
    if (nic.addresses.some((a) => a.address === address)) return nic.name;
  }
  return null;
}
