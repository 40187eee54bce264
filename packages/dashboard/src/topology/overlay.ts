// What is drawn over a node's topology: which rank holds each hardware thread (its compute
// CPUs, or the CPUs of its communication workers), and which ranks use each NIC and GPU.
import type { JobView } from '../api/client';

export interface Holder {
  jobId: string;
  rank: number;
  kind: 'compute' | 'comm';
  /** The binding the agent read back differs from the plan on this CPU. */
  mismatch: boolean;
}

export interface Overlay {
  cpus: Map<number, Holder>;
  /** `rdma:<device>` or `gpu:<index>` → ranks that use it. */
  devices: Map<string, number[]>;
}

/** A colour per rank, spread around the hue circle (golden angle) so neighbours differ; rank 0 is blue, not the red of stderr. */
export function rankColour(rank: number): string {
  return `hsl(${Math.round((210 + rank * 137.508) % 360)} 60% 38%)`;
}

export function overlayFor(node: string, jobs: JobView[]): Overlay {
  const cpus = new Map<number, Holder>();
  const devices = new Map<string, number[]>();
  const use = (key: string, rank: number) => devices.set(key, [...(devices.get(key) ?? []), rank]);
  for (const job of jobs) {
    for (const entry of job.rankMap?.ranks ?? []) {
      if (entry.node !== node) continue;
      const actual = job.ranks[entry.rank]?.actual;
      const actualCpus = actual ? new Set(actual.cpus) : null;
      for (const cpu of entry.cpus)
        cpus.set(cpu, {
          jobId: job.id,
          rank: entry.rank,
          kind: 'compute',
          mismatch: actualCpus !== null && !actualCpus.has(cpu),
        });
      for (const cpu of entry.commCpus)
        cpus.set(cpu, { jobId: job.id, rank: entry.rank, kind: 'comm', mismatch: false });
      for (const nic of entry.nics) use(`rdma:${nic.device}`, entry.rank);
      for (const gpu of entry.gpus) use(`gpu:${gpu}`, entry.rank);
    }
  }
  return { cpus, devices };
}
