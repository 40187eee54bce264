// The inventory as Ansible models it: hosts with vars, groups with hosts, child groups
// and vars, and the two implicit groups `all` and `ungrouped`.
//
// Plain objects in insertion order, so that a stored inventory round-trips through JSON
// and patterns list hosts in the order the file did.
import { FleetErrorCode, RankdError } from '@rankd/protocol';

export type Vars = Record<string, string>;

export interface GroupDef {
  hosts: string[];
  children: string[];
  vars: Vars;
}

export interface InventoryDoc {
  groups: Record<string, GroupDef>;
  hosts: Record<string, { vars: Vars }>;
}

export const ALL = 'all';
export const UNGROUPED = 'ungrouped';

/** Group names that patterns can name unambiguously: no pattern operators in them. */
export const GROUP_NAME = /^[A-Za-z0-9_.-]+$/;

export function emptyInventory(): InventoryDoc {
  return { groups: { [ALL]: emptyGroup(), [UNGROUPED]: emptyGroup() }, hosts: {} };
}

export function emptyGroup(): GroupDef {
  return { hosts: [], children: [], vars: {} };
}

export function ensureGroup(doc: InventoryDoc, name: string): GroupDef {
  return (doc.groups[name] ??= emptyGroup());
}

export function addHost(doc: InventoryDoc, group: string, host: string, vars: Vars): void {
  const h = (doc.hosts[host] ??= { vars: {} });
  Object.assign(h.vars, vars);
  const g = ensureGroup(doc, group);
  if (!g.hosts.includes(host)) g.hosts.push(host);
}

export function addChild(doc: InventoryDoc, parent: string, child: string): void {
  const g = ensureGroup(doc, parent);
  ensureGroup(doc, child);
  if (!g.children.includes(child)) g.children.push(child);
}

/** `b` on top of `a`: hosts and groups are united, vars of `b` win. */
export function mergeInventory(a: InventoryDoc, b: InventoryDoc): InventoryDoc {
  const out = structuredClone(a);
  for (const [name, h] of Object.entries(b.hosts)) Object.assign((out.hosts[name] ??= { vars: {} }).vars, h.vars);
  for (const [name, g] of Object.entries(b.groups)) {
    const target = ensureGroup(out, name);
    for (const h of g.hosts) if (!target.hosts.includes(h)) target.hosts.push(h);
    for (const c of g.children) if (!target.children.includes(c)) target.children.push(c);
    Object.assign(target.vars, g.vars);
  }
  return finish(out);
}

/**
 * Settles the implicit groups as Ansible does: every top-level group is a child of
 * `all`, and `ungrouped` holds the hosts that no other group lists. Throws on a group
 * that is its own ancestor.
 */
export function finish(doc: InventoryDoc): InventoryDoc {
  ensureGroup(doc, ALL);
  ensureGroup(doc, UNGROUPED);
  checkCycles(doc);
  const isChild = new Set<string>();
  for (const [name, g] of Object.entries(doc.groups)) if (name !== ALL) for (const c of g.children) isChild.add(c);
  const all = doc.groups[ALL]!;
  for (const name of Object.keys(doc.groups)) {
    if (name !== ALL && !isChild.has(name) && !all.children.includes(name)) all.children.push(name);
  }
  const grouped = new Set<string>();
  for (const [name, g] of Object.entries(doc.groups))
    if (name !== ALL && name !== UNGROUPED) for (const h of g.hosts) grouped.add(h);
  const ungrouped = doc.groups[UNGROUPED]!;
  ungrouped.hosts = Object.keys(doc.hosts).filter((h) => !grouped.has(h));
  return doc;
}

function checkCycles(doc: InventoryDoc): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, path: string[]): void => {
    const s = state.get(name);
    if (s === 'done') return;
    if (s === 'visiting') {
      const cycle = [...path.slice(path.indexOf(name)), name].join(' → ');
      throw new RankdError(FleetErrorCode.InventoryParse, `group ${name} is its own ancestor (${cycle})`, {
        group: name,
      });
    }
    state.set(name, 'visiting');
    for (const c of doc.groups[name]?.children ?? []) visit(c, [...path, name]);
    state.set(name, 'done');
  };
  for (const name of Object.keys(doc.groups)) visit(name, []);
}

/** Every host of `group` and its descendants, in inventory order. */
export function groupMembers(doc: InventoryDoc, group: string): string[] {
  if (group === ALL) return Object.keys(doc.hosts);
  const found = new Set<string>();
  const seen = new Set<string>();
  const walk = (name: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    const g = doc.groups[name];
    if (!g) return;
    for (const h of g.hosts) found.add(h);
    for (const c of g.children) walk(c);
  };
  walk(group);
  return Object.keys(doc.hosts).filter((h) => found.has(h));
}

/** Groups ordered parent before child (by depth from `all`, then name), as Ansible merges vars. */
export function groupsByDepth(doc: InventoryDoc): string[] {
  const depth = new Map<string, number>([[ALL, 0]]);
  const queue = [ALL];
  while (queue.length > 0) {
    const name = queue.shift()!;
    for (const c of doc.groups[name]?.children ?? []) {
      const d = depth.get(name)! + 1;
      if ((depth.get(c) ?? -1) < d) {
        depth.set(c, d);
        queue.push(c);
      }
    }
  }
  return Object.keys(doc.groups).sort((a, b) => (depth.get(a) ?? 1) - (depth.get(b) ?? 1) || a.localeCompare(b));
}

/** For each host: the groups it is in (directly or through children), and its effective vars. */
export function hostMemberships(doc: InventoryDoc): Map<string, { groups: string[]; vars: Vars }> {
  const out = new Map<string, { groups: string[]; vars: Vars }>();
  for (const h of Object.keys(doc.hosts)) out.set(h, { groups: [], vars: {} });
  for (const group of groupsByDepth(doc)) {
    const vars = doc.groups[group]!.vars;
    for (const h of groupMembers(doc, group)) {
      const m = out.get(h)!;
      if (group !== ALL) m.groups.push(group);
      Object.assign(m.vars, vars);
    }
  }
  for (const [h, m] of out) Object.assign(m.vars, doc.hosts[h]!.vars);
  return out;
}
