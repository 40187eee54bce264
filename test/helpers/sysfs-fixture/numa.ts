// /sys/devices/system/node, hugepages, /proc/meminfo and the GPU-memory markers of
// coherent NVIDIA systems, in the kernel's layout.
import { defaultDistances, type Layout } from './layout.js';
import type { MachineSpec } from './spec.js';
import { cpuList, cpuMask, type Tree } from './tree.js';

const NODE = 'sys/devices/system/node';
const GiB16 = 16 * 1024 * 1024;

/** "Node 0 MemTotal:       16318212 kB", the layout of node_read_meminfo(). */
function nodeMeminfoLine(node: number, key: string, kb: number): string {
  return `Node ${node} ${`${key}:`.padEnd(15)}${String(kb).padStart(9)} kB`;
}

/** "MemTotal:       16318212 kB", the layout of /proc/meminfo. */
function meminfoLine(key: string, value: number, unit = ' kB'): string {
  return `${`${key}:`.padEnd(16)}${String(value).padStart(8)}${unit}`;
}

export function writeNuma(tree: Tree, m: MachineSpec, l: Layout): void {
  const memKb = m.memPerNodeKb ?? GiB16;
  const freeKb = m.freePerNodeKb ?? Math.floor(memKb / 2);
  const huge = m.hugepages ?? [{ sizeKb: 2048, perNode: 0 }];
  const nodes = Math.max(l.nodeCount, 0);
  for (const h of huge) {
    const total = h.perNode * Math.max(nodes, 1);
    const free = (h.freePerNode ?? h.perNode) * Math.max(nodes, 1);
    tree.attr(`sys/kernel/mm/hugepages/hugepages-${h.sizeKb}kB/nr_hugepages`, total);
    tree.attr(`sys/kernel/mm/hugepages/hugepages-${h.sizeKb}kB/free_hugepages`, free);
  }
  const first = huge[0]!;
  const totalKb = memKb * Math.max(nodes, 1);
  tree.raw(
    'proc/meminfo',
    [
      meminfoLine('MemTotal', totalKb),
      meminfoLine('MemFree', freeKb * Math.max(nodes, 1)),
      meminfoLine('MemAvailable', freeKb * Math.max(nodes, 1)),
      meminfoLine('HugePages_Total', first.perNode * Math.max(nodes, 1), ''),
      meminfoLine('HugePages_Free', (first.freePerNode ?? first.perNode) * Math.max(nodes, 1), ''),
      meminfoLine('Hugepagesize', first.sizeKb),
    ].join('\n') + '\n',
  );
  if (nodes === 0) return;

  const ids = [...Array(nodes).keys()];
  tree.attr(`${NODE}/possible`, cpuList(ids));
  tree.attr(`${NODE}/online`, cpuList(ids));
  tree.attr(`${NODE}/has_memory`, cpuList(ids));
  tree.attr(`${NODE}/has_normal_memory`, cpuList(ids));
  tree.attr(`${NODE}/has_cpu`, cpuList(ids.filter((n) => l.nodeCpus(n).length > 0)));
  const distances = m.distances ?? defaultDistances(m, l);
  for (const n of ids) {
    const dir = `${NODE}/node${n}`;
    tree.link(`sys/bus/node/devices/node${n}`, dir);
    const cpus = l.nodeCpus(n);
    const cpuless = n >= l.cpuNodeCount ? m.cpulessNodes![n - l.cpuNodeCount]! : null;
    const mem = cpuless?.memKb ?? memKb;
    const free = Math.min(freeKb, mem);
    tree.attr(`${dir}/cpumap`, cpuMask(cpus, l.total));
    if (!m.masksOnly) tree.attr(`${dir}/cpulist`, cpuList(cpus));
    tree.attr(`${dir}/distance`, (distances[n] ?? []).join(' '));
    tree.raw(
      `${dir}/meminfo`,
      [
        nodeMeminfoLine(n, 'MemTotal', mem),
        nodeMeminfoLine(n, 'MemFree', free),
        nodeMeminfoLine(n, 'MemUsed', mem - free),
      ].join('\n') + '\n',
    );
    for (const h of huge) {
      const hp = `${dir}/hugepages/hugepages-${h.sizeKb}kB`;
      tree.attr(`${hp}/nr_hugepages`, h.perNode);
      tree.attr(`${hp}/free_hugepages`, h.freePerNode ?? h.perNode);
      tree.attr(`${hp}/surplus_hugepages`, 0);
    }
    for (const c of cpus) tree.link(`${dir}/cpu${c}`, `sys/devices/system/cpu/cpu${c}`);
    for (const init of cpuless?.initiators ?? [])
      tree.link(`${dir}/access0/initiators/node${init}`, `${NODE}/node${init}`);
    if (cpuless?.nvidiaGpu)
      tree.raw(`proc/driver/nvidia/gpus/${cpuless.nvidiaGpu}/numa_status`, `Node: ${n}\nStatus: online\n`);
  }
}
