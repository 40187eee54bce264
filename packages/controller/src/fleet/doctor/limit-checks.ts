// Doctor checks of what a node may use and how its agent runs: an ephemeral agent inside a
// Slurm allocation or a pod runs as one user, sees the whole machine in sysfs, and is
// granted part of it (a cpuset, a memory limit, a memlock limit it cannot raise).
import type { AgentMode, DoctorCheck, Facts } from '@rankd/protocol';
// the cpuset module alone: the protocol index compiles every message schema on import
import { formatCpuList } from '@rankd/protocol/cpuset';
import { plural } from '@rankd/protocol/plural';
import { bytes, pass, warn } from './check.js';

/** Ephemeral (as the invoking user, no user switching) or the root service. */
export function agentModeCheck(node: string, mode: AgentMode): DoctorCheck {
  const who = `${mode.user} (uid ${mode.uid})`;
  if (mode.ephemeral)
    return pass(node, 'agent.mode', `ephemeral: runs as ${who}, ranks run as ${mode.user} only; no user switching`);
  if (mode.uid === 0) return pass(node, 'agent.mode', "service: root; ranks run as the job's user");
  return pass(node, 'agent.mode', `service: runs as ${who}, not root: ranks run as ${mode.user} only`);
}

/** The CPUs the agent's cgroup allows against the machine's; said, never judged. */
export function cpusetCheck(node: string, f: Facts): DoctorCheck {
  const every = f.cpu.coreList.flatMap((c) => c.pus).sort((a, b) => a - b);
  const where = f.cpu.cpusetCgroup ? ` (${f.cpu.cpusetCgroup})` : '';
  const hw = f.cpu.hardware;
  const machine = `CPUs ${formatCpuList(every)}: ${plural(hw.cores, 'core')}, ${plural(hw.pus, 'thread')}`;
  if (f.cpu.allowed.length >= every.length)
    return pass(node, 'limits.cpuset', `every CPU of the machine is allowed (${machine})${where}`);
  const mems = f.numa.allowed ? `, ${list(f.numa.allowed, 'memory node', 'memory nodes')}` : '';
  return pass(
    node,
    'limits.cpuset',
    `the cgroup's cpuset allows ${list(f.cpu.allowed, 'CPU', 'CPUs')} (${plural(f.cpu.cores, 'core')}${mems}) of ${machine}${where}: ranks are placed only there`,
  );
}

/** "CPU 1", "CPUs 0-3", "no CPU". */
function list(ids: readonly number[], one: string, many: string): string {
  return ids.length === 0 ? `no ${one}` : `${ids.length === 1 ? one : many} ${formatCpuList(ids)}`;
}

/** The memory cgroup's limit on the agent and its ranks; null for an agent too old to read it. */
export function memoryLimitCheck(node: string, f: Facts): DoctorCheck | null {
  const m = f.memory;
  if (m.cgroupPath === undefined) return null;
  const where = m.cgroupPath ? ` (${m.cgroupPath})` : '';
  if (m.cgroupLimitKb === undefined)
    return warn(
      node,
      'limits.memory',
      `the memory cgroup's limit could not be read${where}`,
      `see the warnings of \`rankd facts ${node}\` for the file that could not be read`,
    );
  const total = m.totalKb === null ? '' : ` of the machine's ${bytes(m.totalKb * 1024)}`;
  const high = m.cgroupHighKb
    ? `; memory.high ${bytes(m.cgroupHighKb * 1024)} (reclaim and throttling start there)`
    : '';
  if (m.cgroupLimitKb === null) return pass(node, 'limits.memory', `no cgroup memory limit${where}${high}`);
  return pass(
    node,
    'limits.memory',
    `the cgroup limits the agent and its ranks together to ${bytes(m.cgroupLimitKb * 1024)}${total}${where}${high}`,
  );
}

/**
 * The memlock limit of an unprivileged agent: it cannot raise its hard limit, and ranks
 * inherit it. RDMA registers (locks) its buffers, so a finite limit makes registration
 * fail; only whoever starts the agent can change it, hence a warning with where to ask.
 */
export function ephemeralMemlockCheck(node: string, f: Facts, mode: AgentMode): DoctorCheck {
  const { ranks, agentHard } = f.memory.memlock;
  if (ranks === null) return pass(node, 'limits.memlock', 'ranks get unlimited locked memory');
  return warn(
    node,
    'limits.memlock',
    `the agent runs unprivileged as ${mode.user} and cannot raise its memlock hard limit of ${agentHard === null ? 'unlimited' : bytes(agentHard)}: ranks get ${bytes(ranks)}, and RDMA needs unlimited (memory registration fails otherwise: ibv_reg_mr / ibv_create_cq "Cannot allocate memory")`,
    'have memlock unlimited where the agent is started: Slurm: "* hard memlock unlimited" in /etc/security/limits.conf of the submit host, or PropagateResourceLimitsExcept=MEMLOCK in slurm.conf (slurmd\'s limit then holds); a pod: securityContext.capabilities.add: ["IPC_LOCK"], or the runtime\'s default ulimit memlock=-1; a shell: `ulimit -l unlimited` before starting the agent, where the hard limit allows it',
  );
}
