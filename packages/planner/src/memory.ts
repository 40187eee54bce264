// Memory binding (`--mem-bind local|none`). `local` binds a rank to the NUMA nodes that
// hold its CPUs, within the nodes the cgroup's cpuset lets it allocate from: binding to
// a node outside cpuset.mems makes every allocation fail.

export interface MemBinding {
  nodes: number[];
  /** Set when the cpuset forced a binding away from the rank's own nodes. */
  note: string | null;
}

export function memoryBinding(
  policy: 'local' | 'none',
  cpuNumas: readonly number[],
  allowedMems: readonly number[] | undefined,
): MemBinding {
  if (policy === 'none') return { nodes: [], note: null };
  if (!allowedMems) return { nodes: [...cpuNumas], note: null };
  const nodes = cpuNumas.filter((n) => allowedMems.includes(n));
  if (nodes.length > 0 || cpuNumas.length === 0) return { nodes, note: null };
  return {
    nodes: [...allowedMems],
    note: `cpuset mems (${allowedMems.join(',')}) exclude NUMA node ${cpuNumas.join(',')} of the rank's CPUs; memory binds to the allowed nodes`,
  };
}
