// Clusters of generated machines for the planner tests: each node's sysfs tree is
// written by the fixture builder and read back by the agent's real facts reader.
import { join } from 'node:path';
import { readFacts } from '@rankd/topology';
import type { PlannerNode } from '@rankd/planner';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';

export interface NodeSpec {
  name: string;
  address: string | null;
  machine: MachineSpec;
}

export function cluster(dir: string, nodes: readonly NodeSpec[]): PlannerNode[] {
  return nodes.map((n) => ({
    name: n.name,
    address: n.address,
    facts: readFacts({ root: buildSysfs(join(dir, n.name), n.machine) }),
  }));
}

/** `count` nodes of one preset, named `${prefix}1…` with addresses `${net}.1…`. */
export function uniform(
  dir: string,
  preset: (host: number) => MachineSpec,
  count: number,
  prefix: string,
  net: string | null,
): PlannerNode[] {
  return cluster(
    dir,
    Array.from({ length: count }, (_, i) => ({
      name: `${prefix}${i + 1}`,
      address: net === null ? null : `${net}.${i + 1}`,
      machine: preset(i + 1),
    })),
  );
}

/** 1,2,3-5 → [1,2,3,4,5]: the compact lists the seeds write, for readable expectations. */
export function cpus(list: string): number[] {
  const out: number[] = [];
  for (const part of list.split(',')) {
    const [lo, hi] = part.split('-').map(Number) as [number, number | undefined];
    for (let c = lo; c <= (hi ?? lo); c++) out.push(c);
  }
  return out;
}

/** Every even CPU from `from` to `to`: the first threads of a VM whose siblings are 2k, 2k+1. */
export function evens(from: number, to: number): number[] {
  const out: number[] = [];
  for (let c = from; c <= to; c += 2) out.push(c);
  return out;
}
