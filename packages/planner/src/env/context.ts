// What every launcher convention's environment is computed from: one rank's place in
// the map and its binding. Each convention family has its own file and only reads this.
import type { RankNic } from '@rankd/protocol';

export interface RankEnvContext {
  rank: number;
  localRank: number;
  nodeRank: number;
  worldSize: number;
  localWorldSize: number;
  nodeCount: number;
  masterAddr: string;
  masterPort: number;
  /** Compute CPUs. */
  cpus: readonly number[];
  commWorkers: number;
  /** The whole node's worker CPUs in local-rank order, comma-separated (CCL_WORKER_AFFINITY). */
  nodeWorkerAffinity: string;
  nics: readonly RankNic[];
  /** The interface ranks bootstrap over (sockets, gloo), or null when unknown. */
  socketIfname: string | null;
  gpus: readonly number[];
  gpuBind: 'none' | 'visible';
}

export type Env = Record<string, string>;
