// The part of a node's facts that CPU placement depends on: the allowed physical
// cores with their allowed hardware threads, grouped into NUMA and package domains.
//
// Cores come from the facts' sibling grouping (thread_siblings_list), never from
// numbering arithmetic: bare metal numbers siblings i and i+P, cloud VMs 2k and 2k+1.
//
// A cluster has a handful of distinct topologies for thousands of nodes. Each node's
// topology is fingerprinted without allocating, and nodes with the same fingerprint
// (checked field by field, so a hash collision cannot mix two machines) share one
// derived topology, whose `key` then lets the planner reuse whole CPU plans.
import type { Facts } from '@rankd/protocol';

export interface TopoCore {
  /** Position in the node's ordered list of allowed cores. */
  index: number;
  package: number;
  /** -1 when unknown. */
  numa: number;
  /** Allowed PUs in sibling order; the first is the core's "first thread". */
  pus: readonly number[];
}

export interface Domain {
  id: number;
  cores: readonly TopoCore[];
}

export interface NodeTopology {
  key: string;
  cores: readonly TopoCore[];
  /** NUMA nodes with at least one allowed core, by id. */
  numaDomains: readonly Domain[];
  /** Packages with at least one allowed core, by id. */
  packageDomains: readonly Domain[];
  /** Some allowed core has two or more allowed threads. */
  hasSiblings: boolean;
  /** NUMA node of each allowed PU. */
  numaOfCpu: ReadonlyMap<number, number>;
  /** NUMA distance between two node ids, or null when unknown. */
  distance(from: number, to: number): number | null;
}

const byFacts = new WeakMap<Facts, NodeTopology>();
const byFingerprint = new Map<string, NodeTopology[]>();
const MAX_SHARED = 4096;
let unshared = 0;

/** The topology of one node, shared with every node whose facts have the same one. */
export function topologyOf(facts: Facts): NodeTopology {
  let topo = byFacts.get(facts);
  if (topo) return topo;
  const allowed = allowedBitmap(facts.cpu.allowed);
  // a core of unknown NUMA node takes it from numa.nodes, which the fingerprint skips
  if (facts.cpu.coreList.some((c) => c.numaNode < 0)) {
    topo = deriveTopology(facts, allowed, `unshared#${unshared++}`);
    byFacts.set(facts, topo);
    return topo;
  }
  const print = fingerprint(facts, allowed);
  const same = byFingerprint.get(print);
  topo = same?.find((t) => matches(t, facts, allowed));
  if (!topo) {
    topo = deriveTopology(facts, allowed, `${print}#${same?.length ?? 0}`);
    if (byFingerprint.size >= MAX_SHARED) byFingerprint.clear();
    if (same) same.push(topo);
    else byFingerprint.set(print, [topo]);
  }
  byFacts.set(facts, topo);
  return topo;
}

function allowedBitmap(allowed: readonly number[]): Uint8Array {
  let max = -1;
  for (const cpu of allowed) if (cpu > max) max = cpu;
  const bits = new Uint8Array(max + 1);
  for (const cpu of allowed) bits[cpu] = 1;
  return bits;
}

const isAllowed = (bits: Uint8Array, cpu: number) => cpu < bits.length && bits[cpu] === 1;

/** Two 32-bit FNV-1a style hashes over cores, allowed threads, NUMA ids and distances. */
function fingerprint(facts: Facts, allowed: Uint8Array): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  const mix = (v: number) => {
    h1 = Math.imul(h1 ^ (v & 0xffff), 0x01000193) ^ (v >>> 16);
    h2 = Math.imul(h2 ^ v, 0x5bd1e995) + 0x9e3779b9;
  };
  for (const core of facts.cpu.coreList) {
    mix(core.package);
    mix(core.numaNode + 2);
    for (const pu of core.pus) mix(isAllowed(allowed, pu) ? pu + 1 : 0);
    mix(0x7fffffff);
  }
  for (const node of facts.numa.nodes) mix(node.id);
  for (const row of facts.numa.distances) for (const d of row) mix(d);
  return `${facts.cpu.coreList.length}:${facts.numa.nodes.length}:${(h1 >>> 0).toString(36)}${(h2 >>> 0).toString(36)}`;
}

/** Whether a derived topology is exactly what these facts would give. */
function matches(topo: NodeTopology, facts: Facts, allowed: Uint8Array): boolean {
  let at = 0;
  for (const core of facts.cpu.coreList) {
    let n = 0;
    for (const pu of core.pus) if (isAllowed(allowed, pu)) n++;
    if (n === 0) continue;
    const mine = topo.cores[at++];
    if (!mine || mine.package !== core.package || mine.numa !== core.numaNode || mine.pus.length !== n) return false;
    let k = 0;
    for (const pu of core.pus) if (isAllowed(allowed, pu) && mine.pus[k++] !== pu) return false;
  }
  if (at !== topo.cores.length) return false;
  const nodes = facts.numa.nodes;
  for (let i = 0; i < nodes.length; i++) {
    const row = facts.numa.distances[i] ?? [];
    for (let j = 0; j < row.length; j++) if (topo.distance(nodes[i]!.id, nodes[j]!.id) !== row[j]) return false;
  }
  return true;
}

function deriveTopology(facts: Facts, allowed: Uint8Array, key: string): NodeTopology {
  const numaOfFactsCpu = new Map<number, number>();
  for (const node of facts.numa.nodes) for (const cpu of node.cpus) numaOfFactsCpu.set(cpu, node.id);

  const cores: TopoCore[] = [];
  const numaOfCpu = new Map<number, number>();
  for (const core of facts.cpu.coreList) {
    const pus = core.pus.filter((pu) => isAllowed(allowed, pu));
    if (pus.length === 0) continue;
    const numa = core.numaNode >= 0 ? core.numaNode : (numaOfFactsCpu.get(pus[0]!) ?? -1);
    cores.push({ index: cores.length, package: core.package, numa, pus });
    for (const pu of pus) numaOfCpu.set(pu, numa);
  }

  const ids = facts.numa.nodes.map((n) => n.id);
  const rowOf = new Map(ids.map((id, i) => [id, i]));
  const distances = facts.numa.distances.map((row) => [...row]);
  const distance = (from: number, to: number): number | null => {
    const i = rowOf.get(from);
    const j = rowOf.get(to);
    if (i === undefined || j === undefined) return null;
    return distances[i]?.[j] ?? null;
  };

  return {
    key,
    cores,
    numaDomains: domainsBy(cores, (c) => c.numa).filter((d) => d.id >= 0),
    packageDomains: domainsBy(cores, (c) => c.package),
    hasSiblings: cores.some((c) => c.pus.length > 1),
    numaOfCpu,
    distance,
  };
}

function domainsBy(cores: readonly TopoCore[], idOf: (c: TopoCore) => number): Domain[] {
  const byId = new Map<number, TopoCore[]>();
  for (const core of cores) {
    const id = idOf(core);
    let list = byId.get(id);
    if (!list) byId.set(id, (list = []));
    list.push(core);
  }
  return [...byId.entries()].sort((a, b) => a[0] - b[0]).map(([id, list]) => ({ id, cores: list }));
}
