// Builds sysfs/procfs trees in the kernel's layout from a compact machine description,
// so that facts readers and planners can be tested on machines this host is not:
// multi-socket bare metal with split hyperthread numbering, cloud VMs with adjacent
// numbering, NPS/SNC NUMA splits, HBM and GPU-memory nodes, cgroup v1/v2 cpusets,
// InfiniBand, RoCE v1/v2, iWARP and eRDMA devices, NICs and GPUs on chosen NUMA nodes.
//
//   const root = buildSysfs(t.testdir(), { packages: 2, coresPerPackage: 4, threadsPerCore: 2 });
//   const facts = readFacts({ root });
import { layout } from './sysfs-fixture/layout.js';
import { writeCpus } from './sysfs-fixture/cpu.js';
import { writeNuma } from './sysfs-fixture/numa.js';
import { writeCgroup, writeHost, writeLimits } from './sysfs-fixture/proc.js';
import { writeDevices } from './sysfs-fixture/devices.js';
import { Tree } from './sysfs-fixture/tree.js';
import type { MachineSpec } from './sysfs-fixture/spec.js';

export type {
  MachineSpec,
  Numbering,
  CgroupSpec,
  HugePagesSpec,
  CpulessNodeSpec,
  NicSpec,
  RdmaDeviceSpec,
  RdmaPortSpec,
  GidSpec,
  GpuSpec,
} from './sysfs-fixture/spec.js';
export { layout as machineLayout } from './sysfs-fixture/layout.js';

/** Writes the tree for `machine` into `dir` (which may already exist) and returns the root. */
export function buildSysfs(dir: string, machine: MachineSpec): string {
  const tree = new Tree(dir);
  const l = layout(machine);
  writeCpus(tree, machine, l);
  writeNuma(tree, machine, l);
  writeCgroup(tree, machine, l);
  writeLimits(tree, machine);
  writeHost(tree, machine);
  writeDevices(tree, machine);
  return dir;
}
