// `lscpu -p` (util-linux 2.37+, "compatible" parsable format) from facts:
//
//   # CPU,Core,Socket,Node,,L1d,L1i,L2,L3
//   0,0,0,0,,0,0,0,0
//
// One row per online CPU. Core and Socket are logical: the position of the CPU's
// thread_siblings (core_siblings) set in the order the sets first appear walking the
// CPUs upward. Node is the first node whose cpumap holds the CPU. Cache columns name
// each distinct cache (sorted by name) and print the instance's sysfs id, or when the
// kernel has none, its position among caches of the same level and type.
import type { Cache, Facts } from '@rankd/protocol';

const HEADER =
  '# The following is the parsable format, which can be fed to other\n' +
  '# programs. Each different item in every column has an unique ID\n' +
  '# starting usually from zero.\n';

function cacheName(c: Cache): string {
  return `L${c.level}${c.type === 'Data' ? 'd' : c.type === 'Instruction' ? 'i' : ''}`;
}

function logicalIds(sets: readonly (readonly number[])[]): number[] {
  const seen: string[] = [];
  return sets.map((s) => {
    if (s.length === 0) return -1;
    const key = s.join(',');
    let i = seen.indexOf(key);
    if (i < 0) i = seen.push(key) - 1;
    return i;
  });
}

export function renderLscpu(facts: Facts): string {
  const pus = facts.cpu.puList ?? facts.cpu.online.map((cpu) => ({ cpu, threadSiblings: [], packageCpus: [] }));
  const caches = facts.cpu.caches ?? [];
  const names = [...new Set(caches.map(cacheName))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const cores = logicalIds(pus.map((p) => p.threadSiblings));
  const sockets = logicalIds(pus.map((p) => p.packageCpus));
  const nodes = [...facts.numa.nodes].sort((a, b) => a.id - b.id);

  let out = HEADER + '# CPU,Core,Socket,Node' + (names.length ? `,,${names.join(',')}` : '') + '\n';
  pus.forEach((pu, i) => {
    const node = nodes.find((n) => n.cpus.includes(pu.cpu));
    const cells = [String(pu.cpu), cores[i]! < 0 ? '' : String(cores[i]), sockets[i]! < 0 ? '' : String(sockets[i]), node ? String(node.id) : ''];
    let row = cells.join(',');
    // a CPU without some cache gets no empty cell for it: lscpu skips the column
    if (names.length) row += ',,' + names.map((name) => cacheId(caches, name, pu.cpu)).filter((id) => id !== '').join(',');
    out += row + '\n';
  });
  return out;
}

function cacheId(caches: readonly Cache[], name: string, cpu: number): string {
  const same = caches.filter((c) => cacheName(c) === name);
  const i = same.findIndex((c) => c.cpus.includes(cpu));
  if (i < 0) return '';
  return String(same[i]!.id ?? i);
}
