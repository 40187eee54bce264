// Which of the node's NVIDIA GPUs the reading process may use, from the lists it was
// started with. sysfs shows every GPU of the machine to a Slurm job or a pod; these say
// which were granted:
// - the devices cgroup (cgroup-devices.ts): the GPUs whose /dev/nvidiaN may be opened, as
//   Slurm's ConstrainDevices and container runtimes set it on cgroup v1;
// - NVIDIA_VISIBLE_DEVICES: the GPUs a container runtime exposed (the Kubernetes device
//   plugin sets it): "all"; "none", "void" or empty for none; else host indexes (PCI bus
//   order, as nvidia-smi counts) or UUIDs;
// - CUDA_VISIBLE_DEVICES: which of those CUDA may use (Slurm's gres, a launcher): indexes
//   into what is left in PCI bus order (CUDA counts the GPUs it can open), or UUIDs ("GPU-…", a unique prefix is enough). CUDA
//   stops at the first entry that names no GPU (Slurm's "NoDevFiles", "-1"), and so does
//   this: the rest count as unmatched.
// Other vendors' GPUs are left as they are. The agent passes its own environment at its
// start, never a job's.
import type { Facts, Gpu } from '@rankd/protocol';

export interface GpuVisibilityInput {
  nvidiaVisibleDevices?: string;
  cudaVisibleDevices?: string;
}

type Visibility = NonNullable<Facts['gpuVisibility']>;

const MAX_VALUE = 4000;

/** The GPU lists of an environment (the agent's own, read once at its start). */
export function gpuVisibilityFromEnv(env: Readonly<Record<string, string | undefined>>): GpuVisibilityInput {
  const nvidia = env['NVIDIA_VISIBLE_DEVICES'];
  const cuda = env['CUDA_VISIBLE_DEVICES'];
  return {
    ...(nvidia === undefined ? {} : { nvidiaVisibleDevices: nvidia }),
    ...(cuda === undefined ? {} : { cudaVisibleDevices: cuda }),
  };
}

/** The devices cgroup's verdict, where one restricts (cgroup v1). */
export interface DeviceRestriction {
  /** What it is, for gpuVisibility.from: "devices cgroup cgroup1:/slurm/uid_1000/job_7". */
  source: string;
  canOpen(gpu: Gpu): boolean;
}

export function applyVisibility(
  gpus: Gpu[],
  input: GpuVisibilityInput,
  devices?: DeviceRestriction,
): { gpus: Gpu[]; gpuVisibility?: Visibility } {
  const from: string[] = [];
  const unmatched: string[] = [];
  const nvidia = gpus.filter((g) => g.vendor === 'nvidia');
  // CUDA images set NVIDIA_VISIBLE_DEVICES=all on machines without a GPU too: nothing to mark
  if (nvidia.length === 0) return { gpus };
  let visible = nvidia;
  if (devices) {
    from.push(devices.source.slice(0, MAX_VALUE));
    visible = nvidia.filter((g) => devices.canOpen(g));
  }
  if (input.nvidiaVisibleDevices !== undefined) {
    from.push(`NVIDIA_VISIBLE_DEVICES=${input.nvidiaVisibleDevices}`.slice(0, MAX_VALUE));
    // host indexes and UUIDs: resolved against every GPU, then kept only where they may be opened
    const openable = new Set(visible);
    visible = exposed(nvidia, input.nvidiaVisibleDevices.trim(), unmatched).filter((g) => openable.has(g));
  }
  if (input.cudaVisibleDevices !== undefined) {
    from.push(`CUDA_VISIBLE_DEVICES=${input.cudaVisibleDevices}`.slice(0, MAX_VALUE));
    visible = cudaVisible(visible, input.cudaVisibleDevices.trim(), unmatched);
  }
  if (from.length === 0) return { gpus };
  const allowed = new Set(visible);
  return {
    gpus: gpus.map((g) => (g.vendor === 'nvidia' ? { ...g, allowed: allowed.has(g) } : g)),
    gpuVisibility: { from, unmatched: unmatched.slice(0, 256).map((e) => e.slice(0, 256)) },
  };
}

/** The container runtime's list: every entry that names a GPU, in PCI order. */
function exposed(nvidia: readonly Gpu[], value: string, unmatched: string[]): Gpu[] {
  if (value === 'all') return [...nvidia];
  if (value === '' || value === 'none' || value === 'void') return [];
  const chosen = new Set<Gpu>();
  for (const entry of value.split(',').map((e) => e.trim())) {
    const gpu = resolve(entry, nvidia);
    if (gpu) chosen.add(gpu);
    else unmatched.push(entry);
  }
  return nvidia.filter((g) => chosen.has(g));
}

/** CUDA's list, in its own order, up to the first entry that names no GPU or one already named. */
function cudaVisible(visible: readonly Gpu[], value: string, unmatched: string[]): Gpu[] {
  if (value === '') return [];
  const entries = value.split(',').map((e) => e.trim());
  const chosen: Gpu[] = [];
  for (let i = 0; i < entries.length; i++) {
    const gpu = resolve(entries[i]!, visible);
    if (!gpu || chosen.includes(gpu)) {
      unmatched.push(...entries.slice(i));
      break;
    }
    chosen.push(gpu);
  }
  return chosen;
}

/** An index into `list`, or a UUID (or a prefix of exactly one GPU's UUID). */
function resolve(entry: string, list: readonly Gpu[]): Gpu | null {
  if (/^\d+$/.test(entry)) return list[Number(entry)] ?? null;
  if (!/^GPU-[0-9a-f-]+$/i.test(entry)) return null;
  const hits = list.filter((g) => g.uuid?.toLowerCase().startsWith(entry.toLowerCase()));
  return hits.length === 1 ? hits[0]! : null;
}
