// Which registered node an inventory host is. Inventories name hosts the way ssh reaches
// them — short names, FQDNs or bare IPs (seed 001 lists 192.168.0.x) — while agents
// register under their short hostname. In order:
//   1. the host var rankd_node, when the inventory says so explicitly;
//   2. a node with exactly the host's name;
//   3. the one node whose registered address is the host's ansible_host, or the host itself;
//   4. a node named like the FQDN's first label (node01.cluster.local → node01).
// Otherwise the host has no agent, and every operation reports it as such.
import type { AgentPresence, NodeView } from '@rankd/protocol';
import type { Vars } from './model.js';

export interface NodeIndex {
  byName: ReadonlyMap<string, NodeView>;
  /** Address → node names; an address shared by several nodes (NAT, loopback) maps to none. */
  byAddress: ReadonlyMap<string, readonly string[]>;
}

export function indexNodes(nodes: readonly NodeView[]): NodeIndex {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const byAddress = new Map<string, string[]>();
  for (const n of nodes) {
    if (n.address) {
      const list = byAddress.get(n.address) ?? [];
      list.push(n.name);
      byAddress.set(n.address, list);
    }
  }
  return { byName, byAddress };
}

export function nodeForHost(host: string, vars: Vars, index: NodeIndex): string | null {
  const explicit = vars['rankd_node'];
  if (explicit) return explicit;
  if (index.byName.has(host)) return host;
  for (const address of [vars['ansible_host'], host]) {
    const names = address ? index.byAddress.get(address) : undefined;
    if (names?.length === 1) return names[0]!;
  }
  const short = host.split('.')[0]!;
  if (short !== host && !/^\d+$/.test(short) && index.byName.has(short)) return short;
  return null;
}

/** A node's standing for fleet operations; "none" when no agent ever registered under that name. */
export function presenceOf(node: string | null, index: NodeIndex): AgentPresence {
  const view = node === null ? undefined : index.byName.get(node);
  if (!view) return 'none';
  if (view.state === 'lost') return 'lost';
  return view.state === 'ready' && view.connected ? 'ready' : 'unreachable';
}
