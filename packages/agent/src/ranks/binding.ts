// Reading back what the kernel actually applied to a rank. The pid the supervisor reports
// first runs the supervisor's child (which pins itself), and only then the program. Until
// the program's exec, /proc shows that child (a wrapper) whose affinity may not be set
// yet; so the binding is read once the cmdline is no longer one of the wrappers'.
//
// What is compared:
// - CPUs: Cpus_allowed_list must equal the plan.
// - Memory: set_mempolicy(MPOL_BIND), the supervisor's, sets
//   the task's memory policy, which Mems_allowed_list (the cpuset) does not show;
//   numa_maps does. With a bind policy its nodes must equal the plan; without numa_maps
//   the planned nodes must at least be allowed.
import { formatCpuList, parseCpuList } from '@rankd/protocol';
import { readCmdline, readProcStat, readStatusFields, readTaskMemPolicy } from './proc.js';
import type { RankBinding } from './rank-spec.js';

export interface BindingPlan {
  cpus: readonly number[];
  memNodes: readonly number[];
  /** Whether memory binding was asked for (NUMA nodes are planned). */
  memBound: boolean;
}

export interface VerifyOptions {
  /** Cmdlines of the stages before the program (the supervisor's child; the agent's own for a PTY rank). */
  wrapperCmdlines: readonly (readonly string[])[];
  /** Give up waiting for the program's exec after this long. */
  timeoutMs?: number;
}

const sameArgv = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);
const sameSet = (a: readonly number[], b: readonly number[]): boolean => formatCpuList(a) === formatCpuList(b);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * How long a CPU mismatch must last to be one. hwloc's x86 discovery (inside MPI_Init of
 * MPICH and Open MPI) binds the process to each CPU in turn to run cpuid there, then puts
 * the binding back; a read in between sees one CPU that is not the plan's. A binding that
 * someone really changed stays changed.
 */
const MISMATCH_SETTLE_MS = 250;

/** Waits for the program to replace its wrappers in `pid`, then reads and judges its binding. */
export async function verifyBinding(pid: number, plan: BindingPlan, opts: VerifyOptions): Promise<RankBinding> {
  const deadline = Date.now() + (opts.timeoutMs ?? 5000);
  for (;;) {
    const cmdline = readCmdline(pid);
    if (cmdline === null) return exited();
    if (cmdline.length === 0) {
      // a zombie, or a process caught inside execve
      const st = readProcStat(pid);
      if (!st || st.state === 'Z' || st.state === 'X') return exited();
    } else if (!opts.wrapperCmdlines.some((w) => sameArgv(w, cmdline))) break;
    if (Date.now() > deadline) return { cpus: [], memNodes: [], verified: false, unread: 'timeout' };
    await sleep(1);
  }
  let binding = judgeBinding(pid, plan);
  // numa_maps reads empty while the program itself execs again (sh -c '…; exec prog'):
  // look again shortly rather than report a bound rank without its policy
  for (
    let retry = 0;
    plan.memBound && binding.memPolicy === undefined && binding.unread === undefined && retry < 10;
    retry++
  ) {
    await sleep(2);
    binding = judgeBinding(pid, plan);
  }
  for (const settle = Date.now() + MISMATCH_SETTLE_MS; binding.mismatch !== undefined && Date.now() < settle;) {
    await sleep(10);
    binding = judgeBinding(pid, plan);
  }
  return binding;
}

function exited(): RankBinding {
  return { cpus: [], memNodes: [], verified: false, unread: 'exited' };
}

/** Reads /proc/<pid>/status and numa_maps now and compares them with the plan. */
export function judgeBinding(pid: number, plan: BindingPlan): RankBinding {
  const status = readStatusFields(pid, ['Cpus_allowed_list', 'Mems_allowed_list']);
  const policy = readTaskMemPolicy(pid);
  // a zombie still has a status file, but it is no longer the running rank
  const stat = readProcStat(pid);
  if (!status || !stat || stat.state === 'Z' || status.Cpus_allowed_list === undefined) return exited();
  const cpus = parseCpuList(status.Cpus_allowed_list);
  const allowedMems = parseCpuList(status.Mems_allowed_list ?? '');
  const bound = policy?.startsWith('bind') ? policyNodes(policy) : null;
  const memNodes = bound ?? allowedMems;
  const problems: string[] = [];
  if (plan.cpus.length > 0 && !sameSet(cpus, plan.cpus)) {
    problems.push(`CPUs ${formatCpuList(cpus)} instead of ${formatCpuList(plan.cpus)}`);
  }
  if (plan.memNodes.length > 0) {
    if (plan.memBound && policy !== null) {
      if (!policy.startsWith('bind') || !bound || !sameSet(bound, plan.memNodes)) {
        problems.push(`memory policy ${policy} instead of bind:${formatCpuList(plan.memNodes)}`);
      }
    } else {
      const outside = plan.memNodes.filter((n) => !allowedMems.includes(n));
      if (outside.length > 0)
        problems.push(
          `NUMA nodes ${formatCpuList(outside)} are not allowed (Mems_allowed_list ${formatCpuList(allowedMems)})`,
        );
    }
  }
  const binding: RankBinding = { cpus, memNodes, verified: problems.length === 0 };
  if (policy !== null) binding.memPolicy = policy;
  if (problems.length > 0) binding.mismatch = problems.join('; ');
  return binding;
}

/** "bind:0-1" or "bind=static:0" → the node list after the last colon. */
function policyNodes(policy: string): number[] | null {
  const colon = policy.lastIndexOf(':');
  if (colon < 0) return null;
  try {
    return parseCpuList(policy.slice(colon + 1));
  } catch {
    return null;
  }
}
