// Doctor checks of one node on its own: the memlock limit ranks get, free memory per
// NUMA node, numactl, the rank launcher, the probe programs of `rankd check net`, and the
// paths a job needs.
import type { DoctorCheck, DoctorNodeReport, Facts } from '@rankd/protocol';
import { bytes, fail, pass, warn } from './check.js';
import { rankNumaNodes } from './rdma-checks.js';
import { agree } from '@rankd/protocol/plural';

/** Below this much free memory a NUMA node cannot take a rank's working set. */
const FREE_FAIL_KB = 1024 * 1024;
const FREE_FAIL_RATIO = 0.05;
const FREE_WARN_RATIO = 0.2;

/** Seed 003: a finite RLIMIT_MEMLOCK makes ibv_create_cq fail with "Cannot allocate memory". */
export function memlockCheck(node: string, f: Facts): DoctorCheck {
  const { ranks, agentSoft, agentHard } = f.memory.memlock;
  const unreadable =
    ranks === null && agentSoft === null && agentHard === null && f.warnings.some((w) => w.path?.endsWith('/limits'));
  if (unreadable)
    return warn(
      node,
      'memlock',
      'the agent could not read its memlock limit',
      'check that /proc/self/limits is readable by the agent',
    );
  if (ranks === null) return pass(node, 'memlock', 'ranks get unlimited locked memory');
  const message = `ranks get RLIMIT_MEMLOCK ${bytes(ranks)}; RDMA registers (locks) its buffers and needs it unlimited (ibv_create_cq: Cannot allocate memory)`;
  const fix =
    'set LimitMEMLOCK=infinity in rankd-agent.service (or "* - memlock unlimited" in /etc/security/limits.conf; docker: --ulimit memlock=-1:-1) and restart the agent';
  return f.rdma.devices.length > 0 ? fail(node, 'memlock', message, fix) : warn(node, 'memlock', message, fix);
}

export function numaMemoryCheck(node: string, f: Facts): DoctorCheck {
  const ids = new Set(rankNumaNodes(f));
  const nodes = f.numa.nodes.filter((n) => ids.has(n.id));
  if (nodes.length === 0) {
    const { totalKb, availableKb } = f.memory;
    if (totalKb === null || availableKb === null)
      return warn(node, 'memory.numa', 'free memory is unknown', 'check that /proc/meminfo is readable by the agent');
    return judge(node, [{ label: 'the machine', total: totalKb, free: availableKb }]);
  }
  const unknown = nodes.filter((n) => n.memTotalKb === null || n.memFreeKb === null);
  if (unknown.length > 0) {
    return warn(
      node,
      'memory.numa',
      `free memory of ${agree(unknown.length, 'NUMA node', 'NUMA nodes')} ${unknown.map((n) => n.id).join(',')} is unknown`,
      'check that /sys/devices/system/node/node*/meminfo is readable by the agent',
    );
  }
  return judge(
    node,
    nodes.map((n) => ({ label: `node ${n.id}`, total: n.memTotalKb!, free: n.memFreeKb!, id: n.id })),
  );
}

function judge(node: string, parts: Array<{ label: string; total: number; free: number; id?: number }>): DoctorCheck {
  const text = parts
    .map((p) => `${p.label}: ${bytes(p.free * 1024)} free of ${bytes(p.total * 1024)} (${pct(p.free, p.total)})`)
    .join('; ');
  const low = parts.filter((p) => p.free < FREE_FAIL_KB || p.free < p.total * FREE_FAIL_RATIO);
  const tight = parts.filter((p) => p.free < p.total * FREE_WARN_RATIO);
  const target = low[0] ?? tight[0];
  const fix = `find what holds memory on ${target?.id === undefined ? 'the node' : `NUMA node ${target.id}`} (\`numastat -m\`) and stop it, or drop the page cache (\`sync; echo 3 > /proc/sys/vm/drop_caches\`)`;
  if (low.length > 0) return fail(node, 'memory.numa', text, fix);
  if (tight.length > 0) return warn(node, 'memory.numa', text, fix);
  return pass(node, 'memory.numa', text);
}

export function numactlCheck(node: string, report: DoctorNodeReport): DoctorCheck {
  if (report.numactl) return pass(node, 'numactl', `numactl at ${report.numactl}`);
  if (report.launcher)
    return pass(node, 'numactl', 'numactl is not installed and not needed: the rank supervisor binds ranks itself');
  return warn(
    node,
    'numactl',
    'numactl is not installed: ranks cannot be bound with it, and `numactl -H` is not there to compare',
    'install it: `apt-get install numactl` or `dnf install numactl`',
  );
}

/** The rank supervisor and its version, or why the node refuses ranks; null for an agent too old to say. */
export function launcherCheck(node: string, report: DoctorNodeReport): DoctorCheck | null {
  const l = report.launcher;
  if (!l) return null;
  if (l.problem === null)
    return pass(node, 'launcher', `rank supervisor ${l.version ?? '?'} at ${l.path}: it pins ranks itself`);
  return fail(
    node,
    'launcher',
    `ranks cannot start: ${l.problem}`,
    'install a C compiler (`apt-get install gcc`) and run `npm run build` where the agent is built, then reinstall and restart the agent',
  );
}

/**
 * The probe programs `rankd check net` starts on this node: iperf3 always (TCP rails and
 * nodes without RDMA), perftest's ib_write_bw and ib_write_lat where the node has RDMA
 * devices. A missing one is a WARN, as a job runs without it; the check's row for the
 * node would read "not installed" instead of a measurement. null for an agent too old to say.
 */
export function probeToolsCheck(node: string, report: DoctorNodeReport, f: Facts | null): DoctorCheck | null {
  const tools = report.probeTools;
  if (!tools) return null;
  const rdma = f?.rdma.devices.map((d) => d.name) ?? [];
  const missing: string[] = [];
  const packages: string[] = [];
  if (!tools.iperf3) {
    missing.push('iperf3 is not installed: rankd check net cannot measure this node');
    packages.push('iperf3');
  }
  const perftest = (['ib_write_bw', 'ib_write_lat'] as const).filter((p) => !tools[p]);
  if (rdma.length > 0 && perftest.length > 0) {
    const what = perftest.length === 2 ? 'ib_write_bw and ib_write_lat are' : `${perftest[0]} is`;
    missing.push(`${what} not installed: rankd check net cannot measure ${rdma.join(', ')} over RDMA`);
    packages.push('perftest');
  }
  if (missing.length > 0)
    return warn(
      node,
      'fabric.tools',
      missing.join('; '),
      `install ${agree(packages.length, 'it', 'them')}: \`apt install ${packages.join(' ')}\` (dnf: the same package names)`,
    );
  const found = [`iperf3 at ${tools.iperf3}`];
  if (rdma.length > 0) found.push(`ib_write_bw at ${tools.ib_write_bw}`, `ib_write_lat at ${tools.ib_write_lat}`);
  else found.push('no RDMA device, so perftest is not needed');
  return pass(node, 'fabric.tools', found.join(', '));
}

export function pathChecks(node: string, report: DoctorNodeReport): DoctorCheck[] {
  return report.paths.map((p) =>
    p.exists
      ? pass(node, 'path', `${p.path} is present (${p.kind ?? 'unknown kind'})`)
      : fail(
          node,
          'path',
          `${p.path} is missing (${p.error ?? 'not found'})`,
          `mount or create ${p.path} on ${node} (is its NFS export mounted? \`findmnt\` lists the mounts)`,
        ),
  );
}

function pct(part: number, total: number): string {
  return total > 0 ? `${Math.round((part / total) * 100)}%` : '?';
}
