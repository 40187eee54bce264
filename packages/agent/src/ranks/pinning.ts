// The pinning wrapper in front of a rank's argv. numactl sets both the CPU affinity and
// the memory policy and then execs the program in the same process, so the pid the
// supervisor recorded stays the rank's pid. Without numactl, taskset (util-linux, always
// there) sets the CPU affinity alone and the job gets a warning: memory then follows the
// kernel's default first-touch policy, which is wrong on multi-socket machines.
import { formatCpuList } from '@rankd/protocol';
import { RankErrorCode, rankError } from './errors.js';
import { findTool } from './program.js';

export type PinningPreference = 'auto' | 'numactl' | 'taskset';

export interface PinningTool {
  kind: 'numactl' | 'taskset';
  path: string;
}

export interface PinnedArgv {
  argv: string[];
  warnings: string[];
  /** True when the memory policy will be set (numactl and planned nodes). */
  memBound: boolean;
}

// Detection costs a few stat calls; a node does not gain or lose numactl while the agent
// runs often enough to justify doing it per rank.
const detected = new Map<PinningPreference, PinningTool | null>();

/** The pinning tool to use, detected once per preference. Null when none is installed. */
export function detectPinningTool(preference: PinningPreference = 'auto'): PinningTool | null {
  if (detected.has(preference)) return detected.get(preference)!;
  let tool: PinningTool | null = null;
  const numactl = preference === 'taskset' ? null : findTool('numactl');
  if (numactl) tool = { kind: 'numactl', path: numactl };
  else if (preference !== 'numactl') {
    const taskset = findTool('taskset');
    if (taskset) tool = { kind: 'taskset', path: taskset };
  }
  detected.set(preference, tool);
  return tool;
}

/**
 * The argv that runs `argv` pinned to `cpus` and bound to `memNodes`. With nothing
 * planned, argv is returned as is: no wrapper, no cost.
 */
export function pinnedArgv(tool: PinningTool | null, cpus: readonly number[], memNodes: readonly number[], argv: readonly string[]): PinnedArgv {
  const warnings: string[] = [];
  if (cpus.length === 0 && memNodes.length === 0) return { argv: [...argv], warnings, memBound: false };
  if (tool === null) {
    if (cpus.length === 0) {
      warnings.push(`numactl is not installed: memory is not bound to NUMA nodes ${formatCpuList(memNodes)}`);
      return { argv: [...argv], warnings, memBound: false };
    }
    throw rankError(RankErrorCode.NoPinningTool, 'neither numactl nor taskset is installed: cannot pin the rank');
  }
  if (tool.kind === 'numactl') {
    const opts: string[] = [];
    if (cpus.length > 0) opts.push(`--physcpubind=${formatCpuList(cpus)}`);
    if (memNodes.length > 0) opts.push(`--membind=${formatCpuList(memNodes)}`);
    return { argv: [tool.path, ...opts, '--', ...argv], warnings, memBound: memNodes.length > 0 };
  }
  if (memNodes.length > 0) {
    warnings.push(`numactl is not installed: CPU affinity only, memory is not bound to NUMA nodes ${formatCpuList(memNodes)}`);
  }
  if (cpus.length === 0) return { argv: [...argv], warnings, memBound: false };
  // taskset takes no "--": its getopt stops at the CPU list, and validateLaunch keeps
  // argv[0] from looking like an option.
  return { argv: [tool.path, '-c', formatCpuList(cpus), ...argv], warnings, memBound: false };
}
