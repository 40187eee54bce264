// Why a node has fewer CPUs or GPUs to give than it has, in the words refusals use: a Slurm
// job or a pod sees the whole machine in sysfs and is granted part of it. The notes are
// worked out from the node's own facts, as the plan sees them: the facts a queued job is
// planned on have the CPUs running jobs hold taken out of cpu.allowed, while cpu.pus still
// counts what the cgroup allows.
import type { Facts } from '@rankd/protocol';
// the cpuset module alone: the protocol index compiles every message schema on import
import { formatCpuList } from '@rankd/protocol/cpuset';
import { sortedGpus } from './gpus.js';

/** e.g. "the cgroup's cpuset allows CPU 1 of CPUs 0-1"; null when every online CPU is free. */
export function cpusetNote(facts: Facts): string | null {
  const every = facts.cpu.coreList.flatMap((c) => c.pus).sort((a, b) => a - b);
  const online = new Set(every);
  const free = facts.cpu.allowed.filter((c) => online.has(c));
  if (free.length >= every.length) return null;
  const of = `of CPUs ${formatCpuList(every)}`;
  const byCgroup = facts.cpu.pus;
  if (free.length === byCgroup) return `the cgroup's cpuset allows ${cpus(free)} ${of}`;
  if (byCgroup >= every.length)
    return `${cpus(free)} ${of} ${free.length === 1 ? 'is' : 'are'} free; jobs hold the rest`;
  return `${cpus(free)} ${of} ${free.length === 1 ? 'is' : 'are'} free: the cgroup's cpuset allows ${byCgroup} and jobs hold the rest`;
}

function cpus(list: readonly number[]): string {
  return list.length === 0 ? 'no CPU' : `${list.length === 1 ? 'CPU' : 'CPUs'} ${formatCpuList(list)}`;
}

/**
 * e.g. "CUDA_VISIBLE_DEVICES=1 allows GPU 1 of 0,1,2,3"; null when every GPU is allowed.
 * GPUs running jobs hold are gone from the facts a queued job is planned on, so "of" counts
 * what is left.
 */
export function gpuLimitNote(facts: Facts): string | null {
  if (!facts.gpus.some((g) => g.allowed === false)) return null;
  const all = sortedGpus(facts.gpus).map((g) => g.index);
  const allowed = sortedGpus(facts.gpus.filter((g) => g.allowed !== false)).map((g) => g.index);
  const by = facts.gpuVisibility?.from.join(' then ') ?? "the agent's GPU variables";
  const what = allowed.length === 0 ? 'no GPU' : `${allowed.length === 1 ? 'GPU' : 'GPUs'} ${allowed.join(',')}`;
  return `${by} allows ${what} of ${all.join(',')}`;
}
