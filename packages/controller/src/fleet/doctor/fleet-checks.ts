// Doctor checks across nodes: what must be the same everywhere a job runs (kernel, RDMA
// driver and firmware, libfabric/PSM3 provider, CPU topology) and how far their clocks are
// apart. A node that differs from the majority is named with what it has and what the
// others have; with no majority every node is flagged.
import type { DoctorCheck, Facts } from '@rankd/protocol';
import { fail, pass, warn } from './check.js';
import { rdmaDriver } from './rdma-checks.js';
import { agree, plural } from '@rankd/protocol/plural';

export interface NodeFacts {
  node: string;
  facts: Facts;
}

/** Clock offsets above these (after the measurement's own uncertainty) are flagged. */
export const CLOCK_WARN_MS = 100;
export const CLOCK_FAIL_MS = 1000;

interface Aspect {
  check: string;
  what: string;
  signature: (f: Facts) => string;
  /** WARN or FAIL for a node that differs. */
  severity: typeof warn | typeof fail;
  fix: string;
}

const ASPECTS: Aspect[] = [
  {
    check: 'same.kernel',
    what: 'kernel',
    signature: (f) => `${f.host.kernel ?? 'unknown'}${f.host.os ? ` (${f.host.os})` : ''}`,
    severity: warn,
    fix: 'run one kernel and OS release on every node of a job: RDMA drivers and OFED are built per kernel',
  },
  {
    check: 'same.rdma',
    what: 'RDMA driver/firmware',
    signature: (f) =>
      f.rdma.devices.length === 0
        ? 'none'
        : [
            ...new Set(
              f.rdma.devices.map(
                (d) =>
                  `${rdmaDriver(d.name)}${d.hcaType ? ` ${d.hcaType}` : ''}${d.fwVersion ? ` fw ${d.fwVersion}` : ''}`,
              ),
            ),
          ]
            .sort()
            .join(', '),
    severity: warn,
    fix: 'flash the same NIC firmware and load the same driver everywhere (`ibv_devinfo` shows fw_ver; mlxup/mlxfwmanager update it)',
  },
  {
    check: 'same.fabric',
    what: 'libfabric/PSM3 provider',
    signature: (f) =>
      `libfabric ${f.fabric.libfabric.length > 0 ? 'present' : 'absent'}, PSM3 provider ${f.fabric.psm3.length > 0 ? 'present' : 'absent'}`,
    severity: fail,
    fix: 'install the same libfabric and providers on every node (oneCCL/MPI ranks that pick different providers cannot connect)',
  },
  {
    check: 'same.cpu',
    what: 'CPU topology',
    signature: (f) => {
      const h = f.cpu.hardware;
      return `${plural(h.packages, 'socket')} × ${plural(h.packages > 0 ? h.cores / h.packages : h.cores, 'core')}, ${plural(h.pus, 'PU')}, ${plural(h.numaNodes, 'NUMA node')}${f.cpu.model ? `, ${f.cpu.model}` : ''}`;
    },
    severity: warn,
    fix: "run a job on nodes of one machine type (--group), or plan per node: rankd places ranks on each node's own topology but frameworks often assume equal nodes",
  },
];

export function consistencyChecks(nodes: readonly NodeFacts[]): DoctorCheck[] {
  if (nodes.length < 2) return [];
  return ASPECTS.flatMap((aspect) => {
    const sig = new Map(nodes.map((n) => [n.node, aspect.signature(n.facts)]));
    const counts = new Map<string, number>();
    for (const s of sig.values()) counts.set(s, (counts.get(s) ?? 0) + 1);
    const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1]);
    const [top, second] = ranked;
    const majority = top && (!second || top[1] > second[1]) ? top[0] : null;
    return nodes.map(({ node }) => {
      const mine = sig.get(node)!;
      if (counts.size === 1)
        return pass(node, aspect.check, `${aspect.what} is the same on all ${plural(nodes.length, 'node')}: ${mine}`);
      if (mine === majority)
        return pass(node, aspect.check, `${aspect.what} matches ${top![1]} of ${nodes.length} nodes: ${mine}`);
      const others = majority
        ? `${top![1]} of ${plural(nodes.length, 'node')} ${agree(top![1], 'has', 'have')} ${majority}`
        : `the nodes disagree: ${ranked.map(([s, c]) => `${c}× ${s}`).join('; ')}`;
      return aspect.severity(node, aspect.check, `${aspect.what} differs: ${node} has ${mine}; ${others}`, aspect.fix);
    });
  });
}

export interface ClockSample {
  node: string;
  /** Agent clock minus controller clock. */
  offsetMs: number;
  /** Half the round trip: the offset is known to within this. */
  uncertaintyMs: number;
}

export function clockChecks(samples: readonly ClockSample[]): DoctorCheck[] {
  const fix = (node: string) =>
    `run a time daemon on ${node} and let it sync (\`chronyc tracking\` or \`timedatectl timesync-status\`)`;
  const out = samples.map((s) => {
    const excess = Math.abs(s.offsetMs) - s.uncertaintyMs;
    const text = `clock is ${fmt(s.offsetMs)} ms from the controller's (±${fmt(s.uncertaintyMs)} ms)`;
    if (excess >= CLOCK_FAIL_MS) return fail(s.node, 'clock', text, fix(s.node));
    if (excess >= CLOCK_WARN_MS) return warn(s.node, 'clock', text, fix(s.node));
    return pass(s.node, 'clock', text);
  });
  if (samples.length >= 2) {
    const sorted = [...samples].sort((a, b) => a.offsetMs - b.offsetMs);
    const lo = sorted[0]!;
    const hi = sorted[sorted.length - 1]!;
    const skew = hi.offsetMs - lo.offsetMs;
    const excess = skew - lo.uncertaintyMs - hi.uncertaintyMs;
    const text = `largest clock skew between nodes: ${fmt(skew)} ms (${hi.node} ahead of ${lo.node})`;
    if (excess >= CLOCK_FAIL_MS)
      out.push(fail(null, 'clock.skew', text, fix(Math.abs(hi.offsetMs) > Math.abs(lo.offsetMs) ? hi.node : lo.node)));
    else if (excess >= CLOCK_WARN_MS)
      out.push(warn(null, 'clock.skew', text, fix(Math.abs(hi.offsetMs) > Math.abs(lo.offsetMs) ? hi.node : lo.node)));
    else out.push(pass(null, 'clock.skew', text));
  }
  return out;
}

function fmt(ms: number): string {
  return (Math.round(ms * 10) / 10).toString();
}
