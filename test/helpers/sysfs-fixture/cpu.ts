// /sys/devices/system/cpu and /proc/cpuinfo in the kernel's layout.
import type { Layout } from './layout.js';
import type { MachineSpec } from './spec.js';
import { cpuList, cpuMask, type Tree } from './tree.js';

const CPU = 'sys/devices/system/cpu';

export function writeCpus(tree: Tree, m: MachineSpec, l: Layout): void {
  const nbits = l.total;
  const masksOnly = m.masksOnly ?? false;
  const all = l.cpus.map((c) => c.cpu);
  // `possible` and `present` survive on every kernel; old ones lack `online`/`offline`
  tree.attr(`${CPU}/possible`, cpuList(all));
  tree.attr(`${CPU}/present`, cpuList(all));
  tree.attr(`${CPU}/kernel_max`, Math.max(nbits - 1, 0));
  if (!masksOnly) {
    tree.attr(`${CPU}/online`, cpuList(l.online));
    // the kernel prints an empty line when nothing is offline
    tree.attr(`${CPU}/offline`, cpuList(l.offline));
  }
  const offline = new Set(l.offline);
  for (const place of l.cpus) {
    const dir = `${CPU}/cpu${place.cpu}`;
    tree.link(`sys/bus/cpu/devices/cpu${place.cpu}`, dir);
    // cpu0 usually cannot be hot-unplugged and has no `online` file
    if (place.cpu !== 0 || offline.has(0)) tree.attr(`${dir}/online`, offline.has(place.cpu) ? 0 : 1);
    else tree.dir(dir);
    if (offline.has(place.cpu)) continue; // the kernel removes topology/ and cache/ of offline CPUs
    const siblings = l.siblingsOf(place.cpu);
    const pkg = l.packageCpusOf(place.cpu);
    const topo = `${dir}/topology`;
    tree.attr(`${topo}/physical_package_id`, place.pkg);
    tree.attr(`${topo}/core_id`, place.core);
    tree.attr(`${topo}/thread_siblings`, cpuMask(siblings, nbits));
    tree.attr(`${topo}/core_siblings`, cpuMask(pkg, nbits));
    if (!masksOnly) {
      tree.attr(`${topo}/die_id`, 0);
      tree.attr(`${topo}/thread_siblings_list`, cpuList(siblings));
      tree.attr(`${topo}/core_siblings_list`, cpuList(pkg));
      tree.attr(`${topo}/core_cpus`, cpuMask(siblings, nbits));
      tree.attr(`${topo}/core_cpus_list`, cpuList(siblings));
      tree.attr(`${topo}/package_cpus`, cpuMask(pkg, nbits));
      tree.attr(`${topo}/package_cpus_list`, cpuList(pkg));
      tree.attr(`${topo}/die_cpus`, cpuMask(pkg, nbits));
      tree.attr(`${topo}/die_cpus_list`, cpuList(pkg));
    }
    if (place.node !== null) tree.link(`${dir}/node${place.node}`, `sys/devices/system/node/node${place.node}`);
    if (m.caches ?? true) writeCaches(tree, dir, place.pkg, place.core, siblings, pkg, nbits, m);
  }
  writeCpuinfo(tree, m, l);
}

function writeCaches(
  tree: Tree,
  dir: string,
  pkg: number,
  core: number,
  siblings: number[],
  pkgCpus: number[],
  nbits: number,
  m: MachineSpec,
): void {
  const coreUid = pkg * m.coresPerPackage + core;
  const caches = [
    { level: 1, type: 'Data', size: '48K', cpus: siblings, id: coreUid },
    { level: 1, type: 'Instruction', size: '32K', cpus: siblings, id: coreUid },
    { level: 2, type: 'Unified', size: '2048K', cpus: siblings, id: coreUid },
    { level: 3, type: 'Unified', size: '107520K', cpus: pkgCpus, id: pkg },
  ];
  caches.forEach((c, i) => {
    const d = `${dir}/cache/index${i}`;
    tree.attr(`${d}/level`, c.level);
    tree.attr(`${d}/type`, c.type);
    tree.attr(`${d}/size`, c.size);
    tree.attr(`${d}/id`, c.id);
    tree.attr(`${d}/shared_cpu_map`, cpuMask(c.cpus, nbits));
    tree.attr(`${d}/shared_cpu_list`, cpuList(c.cpus));
    tree.attr(`${d}/coherency_line_size`, 64);
  });
}

function writeCpuinfo(tree: Tree, m: MachineSpec, l: Layout): void {
  const vendor = m.cpu?.vendor ?? 'GenuineIntel';
  const lines: string[] = [];
  for (const cpu of l.online) {
    const place = l.cpus.find((c) => c.cpu === cpu)!;
    lines.push(
      `processor\t: ${cpu}`,
      `vendor_id\t: ${vendor}`,
      `cpu family\t: ${m.cpu?.family ?? 6}`,
      `model\t\t: ${m.cpu?.model ?? 143}`,
      `model name\t: ${m.cpu?.modelName ?? 'Intel(R) Xeon(R) Platinum 8480+'}`,
      `physical id\t: ${place.pkg}`,
      `siblings\t: ${m.coresPerPackage * m.threadsPerCore}`,
      `core id\t\t: ${place.core}`,
      `cpu cores\t: ${m.coresPerPackage}`,
      '',
    );
  }
  tree.raw('proc/cpuinfo', lines.join('\n') + '\n');
}
