// How a rank gets its planned CPUs and memory nodes. The native launcher (launcher.ts) sets
// both itself, with sched_setaffinity and set_mempolicy in the rank's own process before
// the exec: nothing stands between the supervisor and the program. With the perl
// supervisor, a wrapper goes in front of the rank's argv: numactl sets both the CPU
// affinity and the memory policy and then execs the program in the same process, so the
// pid the supervisor recorded stays the rank's pid; without numactl, taskset (util-linux,
// always there) sets the CPU affinity alone and the job gets a warning: memory then
// follows the kernel's default first-touch policy, which is wrong on multi-socket machines.
import { formatCpuList } from '@rankd/protocol';
import { RankErrorCode, rankError } from './errors.js';
import type { Launcher } from './launcher.js';
import { findTool } from './program.js';

/** auto: the launcher's own pinning where it has it, else numactl, else taskset. */
export type PinningPreference = 'auto' | 'numactl' | 'taskset';

export interface PinningTool {
  kind: 'native' | 'numactl' | 'taskset';
  path: string;
}

export interface PinnedArgv {
  /** What the supervisor execs: the program's argv, behind a wrapper when one pins. */
  argv: string[];
  /** --cpus/--mems for a supervisor that pins itself; empty with a wrapper. */
  options: string[];
  warnings: string[];
  /** True when the memory policy will be set (native or numactl, and planned nodes). */
  memBound: boolean;
}

// Detection costs a few stat calls; a node does not gain or lose numactl while the agent
// runs often enough to justify doing it per rank.
const detected = new Map<PinningPreference, PinningTool | null>();

/** The pinning tool to use, detected once per preference. Null when none is installed. */
export function detectPinningTool(preference: PinningPreference = 'auto', launcher?: Pick<Launcher, 'pins' | 'command'>): PinningTool | null {
  if (preference === 'auto' && launcher?.pins) return { kind: 'native', path: launcher.command[0]! };
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
 * What runs `argv` pinned to `cpus` and bound to `memNodes`. With nothing planned, argv
 * is returned as is: no wrapper, no option, no cost.
 */
export function pinnedArgv(tool: PinningTool | null, cpus: readonly number[], memNodes: readonly number[], argv: readonly string[]): PinnedArgv {
  const warnings: string[] = [];
  const plain = (memBound = false): PinnedArgv => ({ argv: [...argv], options: [], warnings, memBound });
  if (cpus.length === 0 && memNodes.length === 0) return plain();
  if (tool === null) {
    if (cpus.length === 0) {
      warnings.push(`numactl is not installed: memory is not bound to NUMA nodes ${formatCpuList(memNodes)}`);
      return plain();
    }
    throw rankError(RankErrorCode.NoPinningTool, 'neither numactl nor taskset is installed: cannot pin the rank');
  }
  if (tool.kind === 'native') {
    const options = [...(cpus.length > 0 ? ['--cpus', formatCpuList(cpus)] : []), ...(memNodes.length > 0 ? ['--mems', formatCpuList(memNodes)] : [])];
    return { ...plain(memNodes.length > 0), options };
  }
  if (tool.kind === 'numactl') {
    const opts: string[] = [];
    if (cpus.length > 0) opts.push(`--physcpubind=${formatCpuList(cpus)}`);
    if (memNodes.length > 0) opts.push(`--membind=${formatCpuList(memNodes)}`);
    return { argv: [tool.path, ...opts, '--', ...argv], options: [], warnings, memBound: memNodes.length > 0 };
  }
  if (memNodes.length > 0) {
    warnings.push(`numactl is not installed: CPU affinity only, memory is not bound to NUMA nodes ${formatCpuList(memNodes)}`);
  }
  if (cpus.length === 0) return plain();
  // taskset takes no "--": its getopt stops at the CPU list, and validateLaunch keeps
  // argv[0] from looking like an option.
  return { argv: [tool.path, '-c', formatCpuList(cpus), ...argv], options: [], warnings, memBound: false };
}
