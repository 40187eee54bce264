// The NIC-derived values of several conventions, computed once per NIC list: ranks
// on the same NUMA nodes share one list, and a large cluster has thousands of them.
import type { RankNic } from '@rankd/protocol';

export interface NicValues {
  /** "dev:port,dev:port" (UCX_NET_DEVICES). */
  devicePorts: string;
  /** The same list in NCCL_IB_HCA's exact-match form, "=dev:port,…". */
  exactHca: string;
  /** Distinct device names, comma-separated. */
  devices: string;
  firstDevice: string | null;
  firstNetdev: string | null;
  /** The GID index all RoCE ports share, or null when none or when they differ. */
  sharedGidIndex: number | null;
}

const cache = new WeakMap<readonly RankNic[], NicValues>();

export function nicValues(nics: readonly RankNic[]): NicValues {
  let v = cache.get(nics);
  if (!v) {
    const roce = new Set<number | null>();
    for (const n of nics) if (n.linkLayer === 'Ethernet' && n.gidIndex !== null) roce.add(n.gidIndex);
    const devicePorts = nics.map((n) => `${n.device}:${n.port}`).join(',');
    v = {
      devicePorts,
      exactHca: '=' + devicePorts,
      devices: [...new Set(nics.map((n) => n.device))].join(','),
      firstDevice: nics[0]?.device ?? null,
      firstNetdev: nics.find((n) => n.netdev !== null)?.netdev ?? null,
      sharedGidIndex: roce.size === 1 ? [...roce][0]! : null,
    };
    cache.set(nics, v);
  }
  return v;
}
