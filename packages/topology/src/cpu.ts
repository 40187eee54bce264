// CPU topology from /sys/devices/system/cpu, the way hwloc builds it.
//
// - PUs are the online CPUs that have a topology/ folder (offline CPUs lose it).
// - A core is the sibling set a PU reads for itself (core_cpus or thread_siblings), made
//   by the first PU of that set; never inferred from numbering. On AMD compute-unit
//   CPUs (family 15h/16h), siblings with different core_ids are separate cores.
// - A package is the package_cpus/core_siblings set, made by its first PU.
// - Masks are read, as hwloc reads them; *_list files only when masks are missing.
// - Objects that cut across one another (a package that overlaps another without
//   containing it, from inconsistent sysfs) are dropped with a warning, as hwloc's
//   insertion refuses them.
// Only the first PU of each core reads files, and the package files only when no lower
// CPU's package already holds it; the rest inherit, which keeps a 256-CPU machine at a
// few hundred reads.
//
// Beside hwloc's view it keeps what lscpu numbers by: the kernel's possible/present/online
// lists as written, the sibling sets of offline CPUs that kept a topology folder, and
// whether the legacy thread_siblings/core_siblings names exist.
import type { KernelCpuLists, OfflinePu, Pu } from '@rankd/protocol';
import { isAmdWithComputeUnits, type CpuIdentity } from './cpuinfo.js';
import { FactsWarningCode, type Sysfs } from './sysfs.js';
import { plural } from '@rankd/protocol/plural';

const CPU = '/sys/devices/system/cpu';

export interface TopoObject {
  /** physical_package_id or core_id; -1 when unknown. */
  id: number;
  cpus: number[];
}

export interface CpuTopology {
  online: number[];
  offline: number[];
  /** Online CPUs with topology: hwloc's PUs. */
  pus: number[];
  packages: TopoObject[];
  cores: TopoObject[];
  /** Per PU, in CPU order: identifiers and raw sibling sets. */
  puList: Omit<Pu, 'numaNode'>[];
  offlinePus: OfflinePu[];
  legacySiblings: boolean;
  kernelLists: KernelCpuLists;
}

interface SetFiles {
  core: [mask: string, list: string];
  pkg: [mask: string, list: string];
}

const NEW_NAMES: SetFiles = { core: ['core_cpus', 'core_cpus_list'], pkg: ['package_cpus', 'package_cpus_list'] };
const OLD_NAMES: SetFiles = {
  core: ['thread_siblings', 'thread_siblings_list'],
  pkg: ['core_siblings', 'core_siblings_list'],
};

export function readCpuTopology(sys: Sysfs, identity: CpuIdentity): CpuTopology {
  const names = sys.entries(CPU);
  if (names === null) return fallbackTopology(sys);
  const present = names
    .filter((n) => /^cpu\d+$/.test(n))
    .map((n) => Number(n.slice(3)))
    .sort((a, b) => a - b);
  const kernelLists: KernelCpuLists = {
    possible: sys.list(`${CPU}/possible`, { optional: true }),
    present: sys.list(`${CPU}/present`, { optional: true }),
    online: sys.list(`${CPU}/online`, { optional: true }),
  };
  const { online, offline } = readOnline(sys, present, kernelLists.online);
  const onlineSet = new Set(online);
  const files = pickNames(sys, online);
  const readSet = (cpu: number, which: 'core' | 'pkg'): number[] | null => {
    const [mask, list] = files[which];
    const dir = `${CPU}/cpu${cpu}/topology/`;
    return sys.mask(dir + mask, { optional: true }) ?? sys.list(dir + list, { optional: true });
  };
  const readId = (cpu: number, file: string): number =>
    sys.int(`${CPU}/cpu${cpu}/topology/${file}`, { optional: true }) ?? -1;

  const tree = new ObjectTree(sys);
  const pus: number[] = [];
  const records = new Map<number, Omit<Pu, 'numaNode'>>();
  const covered = new Set<number>();
  // null until a multi-thread core shows whether its threads carry their own core_id
  let threadsAreCores: boolean | null = isAmdWithComputeUnits(identity) ? null : false;

  // the package of CPUs already inside a package made by a lower CPU: no need to re-read it
  const packageOf = new Map<number, { id: number; raw: number[] }>();

  for (const cpu of online) {
    if (covered.has(cpu)) continue;
    const rawSiblings = readSet(cpu, 'core');
    if (rawSiblings === null && !sys.exists(`${CPU}/cpu${cpu}/topology`)) continue; // hwloc: not a PU
    pus.push(cpu);
    const siblings = (rawSiblings ?? [cpu]).filter((c) => onlineSet.has(c));
    if (rawSiblings === null)
      sys.warn(
        FactsWarningCode.Missing,
        `no sibling list for cpu${cpu}; taken as a core of its own`,
        `${CPU}/cpu${cpu}/topology`,
      );
    const known = packageOf.get(cpu);
    const rawPackage = known ? known.raw : readSet(cpu, 'pkg');
    const record = {
      cpu,
      package: known ? known.id : readId(cpu, 'physical_package_id'),
      coreId: readId(cpu, 'core_id'),
      threadSiblings: rawSiblings ?? [],
      packageCpus: rawPackage ?? [],
    };
    records.set(cpu, record);
    if (siblings[0] !== cpu) {
      // its own siblings file says another CPU leads its core, yet that CPU's file left it out
      sys.warn(
        FactsWarningCode.Inconsistent,
        `cpu${cpu} is not the first of its own sibling set ${siblings.join(',')}`,
        `${CPU}/cpu${cpu}/topology`,
      );
      continue;
    }
    if (threadsAreCores === null && siblings.length > 1)
      threadsAreCores = readId(siblings[1]!, 'core_id') !== record.coreId;
    for (const sibling of siblings) {
      if (sibling === cpu) continue;
      pus.push(sibling);
      covered.add(sibling);
      const coreId = threadsAreCores ? readId(sibling, 'core_id') : record.coreId;
      records.set(sibling, { ...record, cpu: sibling, coreId });
    }
    if (threadsAreCores) for (const c of siblings) tree.insert('core', { id: records.get(c)!.coreId, cpus: [c] });
    else tree.insert('core', { id: record.coreId, cpus: siblings });
    if (known) continue;
    const pkg = (rawPackage ?? []).filter((c) => onlineSet.has(c));
    if (pkg[0] === cpu && tree.insert('package', { id: record.package, cpus: pkg })) {
      for (const c of pkg) packageOf.set(c, { id: record.package, raw: rawPackage! });
    } else if (rawPackage === null) {
      sys.warn(FactsWarningCode.Missing, `no package set for cpu${cpu}`, `${CPU}/cpu${cpu}/topology`);
    }
  }
  pus.sort((a, b) => a - b);
  // some kernels keep topology/ of an offline CPU (16amd64-8n2c-cpusets in hwloc's corpus)
  const offlinePus: OfflinePu[] = [];
  for (const cpu of offline) {
    const threadSiblings = readSet(cpu, 'core');
    if (threadSiblings !== null) offlinePus.push({ cpu, threadSiblings, packageCpus: readSet(cpu, 'pkg') ?? [] });
  }
  return {
    online,
    offline,
    pus,
    packages: tree.packages,
    cores: tree.cores,
    puList: pus.map((c) => records.get(c)!),
    offlinePus,
    legacySiblings: files === OLD_NAMES || hasLegacyNames(sys, online),
    kernelLists,
  };
}

function readOnline(sys: Sysfs, present: number[], list: number[] | null): { online: number[]; offline: number[] } {
  const online: number[] = [];
  const offline: number[] = [];
  if (list !== null) {
    const set = new Set(list);
    for (const c of present) (set.has(c) ? online : offline).push(c);
    return { online, offline };
  }
  // old kernels: no `online` list, one `online` file per hot-pluggable CPU. A kernel built
  // without CPU hotplug has none at all; probing the last CPU (cpu0 often has none) spares
  // a failed open per CPU there.
  const last = present[present.length - 1];
  if (last === undefined || !sys.exists(`${CPU}/cpu${last}/online`)) return { online: present, offline };
  for (const c of present) (sys.text(`${CPU}/cpu${c}/online`, { optional: true }) === '0' ? offline : online).push(c);
  return { online, offline };
}

function pickNames(sys: Sysfs, online: number[]): SetFiles {
  const first = online[0];
  if (first === undefined) return NEW_NAMES;
  return sys.exists(`${CPU}/cpu${first}/topology/core_cpus`) || sys.exists(`${CPU}/cpu${first}/topology/core_cpus_list`)
    ? NEW_NAMES
    : OLD_NAMES;
}

/** Whether thread_siblings is there beside core_cpus: every kernel keeps it, crafted trees may not. */
function hasLegacyNames(sys: Sysfs, online: number[]): boolean {
  const first = online[0];
  return first !== undefined && sys.exists(`${CPU}/cpu${first}/topology/thread_siblings`);
}

/** No /sys/devices/system/cpu at all: count processors in /proc/cpuinfo. */
function fallbackTopology(sys: Sysfs): CpuTopology {
  const text = sys.raw('/proc/cpuinfo', { optional: true }) ?? '';
  const cpus = [...text.matchAll(/^processor\s*:\s*(\d+)/gm)].map((m) => Number(m[1]));
  sys.warn(
    FactsWarningCode.Inferred,
    `no CPU topology in sysfs; ${plural(cpus.length, 'CPU')} counted in /proc/cpuinfo, each taken as a core`,
    CPU,
  );
  return {
    online: cpus,
    offline: [],
    pus: cpus,
    packages: [],
    cores: cpus.map((c) => ({ id: -1, cpus: [c] })),
    puList: cpus.map((c) => ({ cpu: c, package: -1, coreId: -1, threadSiblings: [], packageCpus: [] })),
    offlinePus: [],
    legacySiblings: false,
    kernelLists: { possible: null, present: null, online: null },
  };
}

/**
 * Packages and cores inserted by cpuset, refusing any that would overlap an existing
 * object without containing it or being contained (hwloc's insertion rule).
 */
class ObjectTree {
  readonly packages: TopoObject[] = [];
  readonly cores: TopoObject[] = [];
  private readonly owner = { package: new Map<number, number>(), core: new Map<number, number>() };

  constructor(private readonly sys: Sysfs) {}

  /** Inserts unless refused; true when the object is (now) in the tree. */
  insert(kind: 'package' | 'core', obj: TopoObject): boolean {
    for (const k of ['package', 'core'] as const) {
      const list = k === 'package' ? this.packages : this.cores;
      const overlap = new Map<number, number>();
      for (const c of obj.cpus) {
        const o = this.owner[k].get(c);
        if (o !== undefined) overlap.set(o, (overlap.get(o) ?? 0) + 1);
      }
      for (const [index, shared] of overlap) {
        const other = list[index]!;
        const equal = shared === obj.cpus.length && shared === other.cpus.length;
        if (k === kind && equal) return true; // the same object seen twice
        const nested = k !== kind && (shared === obj.cpus.length || shared === other.cpus.length);
        if (!nested) {
          this.sys.warn(
            FactsWarningCode.Inconsistent,
            `${kind} ${obj.id} (cpus ${obj.cpus.join(',')}) overlaps ${k} ${other.id} (cpus ${other.cpus.join(',')}); ignored as hwloc does`,
          );
          return false;
        }
      }
    }
    const list = kind === 'package' ? this.packages : this.cores;
    for (const c of obj.cpus) this.owner[kind].set(c, list.length);
    list.push(obj);
    return true;
  }
}
