// Open MPI's --report-bindings lines:
//   [node] MCW rank 0 bound to socket 0[core 0[hwt 0]], socket 0[core 1[hwt 0]]: [B./B./../..][../../../..]
// Cores are numbered across the machine (hwloc logical order), hardware threads within
// their core. Without the node's facts, the line falls back to the CPU list.
import { formatCpuList } from '@rankd/protocol/cpuset';
import type { Facts, RankEntry, RankMap } from '@rankd/protocol';

interface Layout {
  /** Per package, in order: its cores, each a list of PUs. */
  packages: { id: number; cores: { logical: number; pus: readonly number[] }[] }[];
}

export function renderBindings(map: RankMap, facts?: Readonly<Record<string, Facts>>): string {
  const layouts = new Map<string, Layout>();
  return map.ranks
    .map((r) => {
      const f = facts?.[r.node];
      if (!f)
        return `[${r.node}] MCW rank ${r.rank} bound to cpus ${formatCpuList([...r.cpus, ...r.commCpus]) || 'none'}\n`;
      let layout = layouts.get(r.node);
      if (!layout) layouts.set(r.node, (layout = layoutOf(f)));
      return bindingLine(r, layout);
    })
    .join('');
}

function layoutOf(facts: Facts): Layout {
  const byPackage = new Map<number, { logical: number; pus: readonly number[] }[]>();
  facts.cpu.coreList.forEach((core, logical) => {
    let list = byPackage.get(core.package);
    if (!list) byPackage.set(core.package, (list = []));
    list.push({ logical, pus: core.pus });
  });
  return { packages: [...byPackage.entries()].sort((a, b) => a[0] - b[0]).map(([id, cores]) => ({ id, cores })) };
}

function bindingLine(r: RankEntry, layout: Layout): string {
  const bound = new Set([...r.cpus, ...r.commCpus]);
  const described: string[] = [];
  let picture = '';
  for (const pkg of layout.packages) {
    const cells = pkg.cores.map((core) => {
      const hwts = core.pus.map((pu, i) => (bound.has(pu) ? i : -1)).filter((i) => i >= 0);
      if (hwts.length > 0) described.push(`socket ${pkg.id}[core ${core.logical}[hwt ${formatCpuList(hwts)}]]`);
      return core.pus.map((pu) => (bound.has(pu) ? 'B' : '.')).join('');
    });
    picture += `[${cells.join('/')}]`;
  }
  const what = described.length > 0 ? described.join(', ') : 'nothing';
  return `[${r.node}] MCW rank ${r.rank} bound to ${what}: ${picture}\n`;
}
