// The logical ids `lscpu -p` prints, worked out from facts by util-linux 2.38's rules
// (lscpu.c, lscpu-topology.c), which are not hwloc's:
//
// - Rows: every possible CPU, less those the kernel's `online` list leaves out (when it
//   has one) and those its `present` list leaves out (when it has one). Offline CPUs are
//   not printed, but they still take part in the numbering below.
// - CPU types: the runs of /proc/cpuinfo (see cpu-kinds.ts). A CPU no run names takes the
//   first; with no run at all lscpu knows no type and prints every cell of the row empty.
// - Core and Socket: per CPU type, the distinct thread_siblings (core_siblings) sets in
//   the order CPUs of that type show them, walking every possible CPU with a
//   thread_siblings file upward, offline ones included. A CPU's id is the position of the
//   first set that holds it. Each type counts from 0, so the E cores of a hybrid part
//   start again at core 0. No thread_siblings file: the cells stay empty.
// - Node: the first node folder, by number, whose cpumap holds the CPU; empty without NUMA.
// - Caches: an instance is known by type, level and id; where sysfs has no id, the id is
//   how many instances of that type and level came before it. The first CPU to read an
//   instance gives it its CPUs, and a later instance with the same type, level and id is
//   the same cache however its CPUs differ (hybrid parts where P and E cores reuse L1
//   ids). Columns are the cache names sorted (L1d, L1i, L2, L3); a CPU prints, per name,
//   the id of the first instance that holds it, and nothing at all for a name none does.
import type { Cache, Facts } from '@rankd/protocol';

export interface LscpuRow {
  cpu: number;
  /** False when /proc/cpuinfo named no CPU type: lscpu prints the row empty. */
  typed: boolean;
  core: number | null;
  socket: number | null;
  node: number | null;
  /** Ids for the cache columns this CPU has, in column order. */
  caches: number[];
}

export interface LscpuTable {
  cacheNames: string[];
  rows: LscpuRow[];
}

export function lscpuTable(facts: Facts): LscpuTable {
  const cpu = facts.cpu;
  const { possible, listed } = rowCpus(facts);
  // facts from agents older than the kinds field: one type for all
  const kinds = cpu.kinds ?? [{ cpus: [] }];
  const kindOf = new Map<number, number>();
  kinds.forEach((k, i) => k.cpus.forEach((c) => kindOf.set(c, i)));
  const typeOf = (c: number) => kindOf.get(c) ?? 0;
  const typed = kinds.length > 0;

  const { core, socket } = typed
    ? topologyIds(facts, possible, typeOf)
    : { core: new Map<number, number>(), socket: new Map<number, number>() };
  const node = nodeIds(facts);
  const caches = typed ? lscpuCaches(cpu.caches ?? []) : [];
  const cacheNames = [...new Set(caches.map((c) => c.name))];

  return {
    cacheNames,
    rows: listed.map((c) => ({
      cpu: c,
      typed,
      core: core.get(c) ?? null,
      socket: socket.get(c) ?? null,
      node: node.get(c) ?? null,
      caches: cacheNames.flatMap((name) => {
        const hit = caches.find((ca) => ca.name === name && ca.cpus.has(c));
        return hit ? [hit.id] : [];
      }),
    })),
  };
}

/** The possible CPUs, and those of them lscpu -p lists. */
function rowCpus(facts: Facts): { possible: number[]; listed: number[] } {
  const lists = facts.cpu.kernelLists;
  const known = [...new Set([...facts.cpu.online, ...facts.cpu.offline])].sort((a, b) => a - b);
  // without cpu/possible lscpu gives up; the CPU folders are the nearest thing to print
  const possible = lists?.possible ?? lists?.present ?? known;
  const online = lists ? lists.online : facts.cpu.online;
  const onlineSet = online ? new Set(online) : null;
  const presentSet = lists?.present ? new Set(lists.present) : null;
  const listed = possible.filter((c) => (!onlineSet || onlineSet.has(c)) && (!presentSet || presentSet.has(c)));
  return { possible, listed };
}

/** Logical core and socket per CPU, numbered within each CPU type. */
function topologyIds(facts: Facts, possible: readonly number[], typeOf: (cpu: number) => number) {
  const core = new Map<number, number>();
  const socket = new Map<number, number>();
  if (facts.cpu.legacySiblings === false) return { core, socket };
  const sets = new Map<number, { threads: readonly number[]; pkg: readonly number[] }>();
  for (const p of facts.cpu.puList ?? []) sets.set(p.cpu, { threads: p.threadSiblings, pkg: p.packageCpus });
  for (const p of facts.cpu.offlinePus ?? []) sets.set(p.cpu, { threads: p.threadSiblings, pkg: p.packageCpus });

  const coreMaps = new Map<number, Numbering>();
  const socketMaps = new Map<number, Numbering>();
  for (const c of possible) {
    const s = sets.get(c);
    if (!s || s.threads.length === 0) continue; // no thread_siblings file: lscpu skips the CPU
    const type = typeOf(c);
    if (!coreMaps.has(type)) [coreMaps, socketMaps].forEach((m) => m.set(type, new Numbering()));
    coreMaps.get(type)!.add(s.threads);
    socketMaps.get(type)!.add(s.pkg);
  }
  for (const c of possible) {
    const type = typeOf(c);
    const k = coreMaps.get(type)?.idOf(c);
    const p = socketMaps.get(type)?.idOf(c);
    if (k !== undefined) core.set(c, k);
    if (p !== undefined) socket.set(c, p);
  }
  return { core, socket };
}

/** Distinct CPU sets in order of first appearance; a CPU's id is the first set holding it. */
class Numbering {
  private readonly keys = new Set<string>();
  private readonly first = new Map<number, number>();

  add(set: readonly number[]): void {
    const key = set.join(',');
    if (this.keys.has(key)) return;
    const id = this.keys.size;
    this.keys.add(key);
    for (const c of set) if (!this.first.has(c)) this.first.set(c, id);
  }

  idOf(cpu: number): number | undefined {
    return this.first.get(cpu);
  }
}

function nodeIds(facts: Facts): Map<number, number> {
  const out = new Map<number, number>();
  if (facts.numa.assumed) return out;
  const nodes = [...facts.numa.nodes].sort((a, b) => a.id - b.id);
  for (const n of nodes) for (const c of n.cpus) if (!out.has(c)) out.set(c, n.id);
  return out;
}

interface LscpuCache {
  name: string;
  type: Cache['type'];
  level: number;
  id: number;
  cpus: Set<number>;
}

/** lscpu's cache instances, sorted by name (stably: same-name instances keep their order). */
function lscpuCaches(caches: readonly Cache[]): LscpuCache[] {
  const out: LscpuCache[] = [];
  for (const c of caches) {
    const same = out.filter((o) => o.level === c.level && o.type === c.type);
    const id = c.id ?? same.length;
    if (same.some((o) => o.id === id)) continue;
    out.push({ name: cacheName(c), type: c.type, level: c.level, id, cpus: new Set(c.cpus) });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function cacheName(c: Cache): string {
  return `L${c.level}${c.type === 'Data' ? 'd' : c.type === 'Instruction' ? 'i' : ''}`;
}
