// A compact human view of the facts: what a person checks before placing ranks.
import type { Facts } from '@rankd/protocol';
// the cpuset module alone: the protocol index compiles every message schema on import
import { formatCpuList } from '@rankd/protocol/cpuset';
import { plural } from '@rankd/protocol/plural';

function gib(kb: number | null): string {
  return kb === null ? '?' : `${(kb / 1048576).toFixed(1)} GiB`;
}

function bytes(n: number | null): string {
  if (n === null) return 'unlimited';
  if (n >= 1 << 30) return `${(n / 2 ** 30).toFixed(1)} GiB`;
  if (n >= 1 << 20) return `${(n / 2 ** 20).toFixed(0)} MiB`;
  if (n >= 1 << 10) return `${(n / 2 ** 10).toFixed(0)} KiB`;
  return `${n} B`;
}

/** The memory cgroup's limit; null for facts of agents that did not read it. */
function memoryCgroupLine(m: Facts['memory']): string | null {
  const where = m.cgroupPath ? ` (${m.cgroupPath})` : '';
  if (m.cgroupLimitKb === undefined) return m.cgroupPath ? `cgroup memory limit unknown${where}` : null;
  const high = m.cgroupHighKb ? `memory.high ${gib(m.cgroupHighKb)}` : null;
  if (m.cgroupLimitKb === null)
    return high ? `no cgroup memory limit; ${high}${where}` : `no cgroup memory limit${where}`;
  const bits = [high, m.cgroupPath].filter(Boolean).join('; ');
  return `cgroup limit ${gib(m.cgroupLimitKb)}${bits ? ` (${bits})` : ''}`;
}

/** Which GPUs the agent's CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES allow. */
function gpuVisibilityLine(f: Facts): string {
  const v = f.gpuVisibility!;
  const allowed = f.gpus.filter((g) => g.allowed === true).map((g) => g.index);
  const which = allowed.length ? `nvidia #${allowed.join(',')}` : 'no NVIDIA GPU';
  const unmatched = v.unmatched.length ? `; naming no GPU here: ${v.unmatched.join(',')}` : '';
  return `allowed by ${v.from.join(' then ')}: ${which}${unmatched}`;
}

export function renderSummary(f: Facts): string {
  const lines: string[] = [];
  const h = f.host;
  const hostBits = [h.os, h.kernel && `kernel ${h.kernel}`, h.arch].filter(Boolean).join(', ');
  lines.push(
    `host     ${h.hostname ?? '?'}${hostBits ? ` (${hostBits})` : ''}${f.root === '/' ? '' : ` [root ${f.root}]`}`,
  );

  const hw = f.cpu.hardware;
  const cpu = f.cpu;
  lines.push(`cpu      ${cpu.model ?? 'unknown model'}`);
  lines.push(`         ${plural(hw.packages, 'socket')}, ${plural(hw.cores, 'core')}, ${plural(hw.pus, 'thread')}`);
  const numaAllowed = cpu.numaNodes ?? hw.numaNodes;
  const restricted =
    cpu.packages !== hw.packages || cpu.cores !== hw.cores || cpu.pus !== hw.pus || numaAllowed !== hw.numaNodes;
  const mems = f.numa.allowed ? `, mems ${formatCpuList(f.numa.allowed) || 'none'}` : '';
  const cgroup = cpu.cpusetCgroup ? `; ${cpu.cpusetCgroup}` : '';
  lines.push(
    restricted
      ? `         allowed: ${plural(cpu.packages, 'socket')}, ${plural(cpu.cores, 'core')}, ${plural(cpu.pus, 'thread')}, ${plural(numaAllowed, 'NUMA node')} (cpus ${formatCpuList(cpu.allowed) || 'none'}${mems}${cgroup})`
      : '         allowed: all',
  );
  if (cpu.offline.length) lines.push(`         offline: ${formatCpuList(cpu.offline)}`);

  for (const n of f.numa.nodes) {
    const what = n.gpuMemory ? `GPU memory of ${n.gpuMemory}` : n.cpuless ? 'no cpus' : `cpus ${formatCpuList(n.cpus)}`;
    const free = n.memFreeKb === null ? '' : `, ${gib(n.memFreeKb)} free`;
    const allowed = f.numa.allowed && !f.numa.allowed.includes(n.id) ? ' (not allowed)' : '';
    lines.push(
      `${n === f.numa.nodes[0] ? 'numa     ' : '         '}node ${n.id}: ${what}; ${gib(n.memTotalKb)}${free}${allowed}`,
    );
  }
  if (f.numa.distances.length > 1)
    lines.push(`         distances: ${f.numa.distances.map((r) => r.join(' ')).join(' | ')}`);

  const m = f.memory;
  const huge = m.hugepages.filter((p) => p.total > 0).map((p) => `${p.total}×${p.sizeKb} kB (${p.free} free)`);
  lines.push(
    `memory   ${gib(m.totalKb)} total, ${gib(m.availableKb)} available${huge.length ? `; huge pages ${huge.join(', ')}` : ''}`,
  );
  lines.push(
    `         memlock: agent ${bytes(m.memlock.agentSoft)} soft / ${bytes(m.memlock.agentHard)} hard; ranks ${bytes(m.memlock.ranks)}`,
  );
  const cgroupLine = memoryCgroupLine(m);
  if (cgroupLine) lines.push(`         ${cgroupLine}`);

  const nics = f.nics.filter((n) => !n.virtual);
  nics.forEach((n, i) => {
    const bits = [
      n.state,
      n.speedMbps === null ? null : `${n.speedMbps / 1000} Gb/s`,
      `numa ${n.numaNode ?? '?'}`,
      n.pciAddress,
      n.rdmaDevice && `rdma ${n.rdmaDevice}`,
      n.addresses
        .filter((a) => a.family === 'inet')
        .map((a) => `${a.address}/${a.prefixLength}`)
        .join(' ') || null,
    ].filter(Boolean);
    lines.push(`${i === 0 ? 'nics     ' : '         '}${n.name}: ${bits.join(', ')}`);
  });
  if (nics.length === 0) lines.push('nics     none (besides virtual ones)');

  f.rdma.devices.forEach((d, i) => {
    const ports = d.ports
      .map(
        (p) =>
          `port ${p.port} ${p.state} ${p.linkLayer}${p.rate ? ` ${p.rate}` : ''}${p.netdev ? ` (${p.netdev})` : ''}, ${plural(p.gids.length, 'gid')}`,
      )
      .join('; ');
    lines.push(`${i === 0 ? 'rdma     ' : '         '}${d.name}: ${d.transport}, numa ${d.numaNode ?? '?'}, ${ports}`);
  });
  if (f.rdma.devices.length === 0) lines.push('rdma     none');

  f.gpus.forEach((g, i) => {
    lines.push(
      `${i === 0 ? 'gpus     ' : '         '}${g.vendor} #${g.index} ${g.pciAddress}: ${g.model ?? g.deviceId}, numa ${g.numaNode ?? '?'}${g.allowed === false ? ' (not allowed)' : ''}`,
    );
  });
  if (f.gpus.length === 0) lines.push('gpus     none');
  if (f.gpuVisibility) lines.push(`         ${gpuVisibilityLine(f)}`);

  const fab = [...f.fabric.libfabric, ...f.fabric.psm3];
  lines.push(`fabric   ${fab.length ? fab.join(', ') : 'no libfabric found'}`);

  if (f.warnings.length) {
    lines.push(`warnings ${f.warnings.length}`);
    for (const w of f.warnings) lines.push(`         ${w.code}${w.path ? ` ${w.path}` : ''}: ${w.message}`);
  }
  return lines.join('\n') + '\n';
}
