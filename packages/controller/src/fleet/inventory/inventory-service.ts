// The fleet inventory as the rest of the controller uses it: import and show, resolve a
// host pattern to hosts and their nodes, and resolve `--group` for the planner.
//
// Patterns see one universe: the inventory's hosts in file order, then the registered
// nodes the inventory does not name (so `rankd exec node07 -- …` works without any
// inventory). Hosts without an agent stay in every answer, marked "none".
import {
  FleetErrorCode,
  PlanErrorCode,
  RankdError,
  type InventoryImport,
  type InventoryView,
  type MatchedHost,
} from '@rankd/protocol';
import type { EventsRepo } from '../../store/events-repo.js';
import type { NodeRegistry } from '../../nodes/node-registry.js';
import { PlanError, type GroupResolver } from '@rankd/planner';
import { naturalCompare } from '@rankd/protocol/natural-order';
import type { InventoryRepo, StoredInventory } from './inventory-repo.js';
import {
  ALL,
  UNGROUPED,
  emptyInventory,
  groupMembers,
  hostMemberships,
  mergeInventory,
  type InventoryDoc,
  type Vars,
} from './model.js';
import { indexNodes, nodeForHost, presenceOf, type NodeIndex } from './node-mapping.js';
import { parseInventory } from './parse.js';
import { matchPattern, type PatternUniverse } from './pattern.js';
import { agree } from '@rankd/protocol/plural';

interface Snapshot {
  universe: PatternUniverse;
  hosts: Map<string, { node: string | null; vars: Vars; groups: string[] }>;
  index: NodeIndex;
  unlisted: string[];
}

export class FleetInventory {
  private stored: StoredInventory | null = null;

  constructor(
    private readonly repo: InventoryRepo,
    private readonly registry: NodeRegistry,
    private readonly events: EventsRepo,
  ) {}

  load(): void {
    this.stored = this.repo.get();
  }

  /** Parses and stores an inventory file; a parse error leaves the stored one untouched. */
  import(input: InventoryImport): InventoryView {
    const source = input.source ?? 'inventory';
    const { doc, format } = parseInventory({
      content: input.content,
      format: input.format,
      source,
      group: input.group,
    });
    const base = input.merge && this.stored ? this.stored.doc : emptyInventory();
    const merged = mergeInventory(base, doc);
    this.stored = {
      doc: merged,
      source: input.merge && this.stored ? `${this.stored.source} + ${source}` : source,
      format,
      importedAt: Date.now(),
    };
    this.repo.put(this.stored);
    this.events.append('inventory.imported', source, {
      format,
      merge: input.merge ?? false,
      hosts: Object.keys(doc.hosts).length,
    });
    return this.view();
  }

  clear(): void {
    this.stored = null;
    this.repo.clear();
    this.events.append('inventory.cleared', 'inventory');
  }

  view(): InventoryView {
    const doc = this.doc();
    const snap = this.snapshot();
    return {
      source: this.stored
        ? {
            name: this.stored.source,
            format: this.stored.format,
            importedAt: new Date(this.stored.importedAt).toISOString(),
          }
        : null,
      groups: Object.entries(doc.groups).map(([name, g]) => ({
        name,
        hosts: g.hosts,
        children: g.children,
        vars: g.vars,
        members: groupMembers(doc, name),
      })),
      hosts: Object.keys(doc.hosts).map((name) => {
        const h = snap.hosts.get(name)!;
        return { name, node: h.node, agent: presenceOf(h.node, snap.index), groups: h.groups, vars: h.vars };
      }),
      unlisted: snap.unlisted,
    };
  }

  /**
   * The hosts a pattern selects, each with its node and agent presence. Two hosts that are
   * the same node (a name and an IP) yield the node once, under the first host.
   */
  resolve(pattern: string): MatchedHost[] {
    return this.resolveListed(pattern).map(({ listed: _, ...h }) => h);
  }

  /** As resolve(), telling inventory hosts (listed) from registered nodes outside the inventory. */
  private resolveListed(pattern: string): Array<MatchedHost & { listed: boolean }> {
    const snap = this.snapshot();
    const unlisted = new Set(snap.unlisted);
    const seen = new Set<string>();
    const out: Array<MatchedHost & { listed: boolean }> = [];
    for (const host of matchPattern(pattern, snap.universe)) {
      const node = snap.hosts.get(host)?.node ?? null;
      if (node !== null) {
        if (seen.has(node)) continue;
        seen.add(node);
      }
      out.push({ host, node, agent: presenceOf(node, snap.index), listed: !unlisted.has(host) });
    }
    return out;
  }

  /**
   * `--group` for the planner. Every inventory host the pattern selects must be a node the
   * planner may use: a job must not quietly run on fewer hosts than the inventory names.
   * Registered nodes outside the inventory that are not ready are left out, as before.
   */
  groupResolver(): GroupResolver {
    return (group, candidates) => {
      let hosts: Array<MatchedHost & { listed: boolean }>;
      try {
        hosts = this.resolveListed(group);
      } catch (err) {
        if (
          err instanceof RankdError &&
          (err.code === FleetErrorCode.PatternUnknown || err.code === FleetErrorCode.PatternInvalid)
        ) {
          throw new PlanError(
            err.code === FleetErrorCode.PatternUnknown ? PlanErrorCode.NoNodes : PlanErrorCode.BadSpec,
            `--group ${group}: ${err.message}`,
          );
        }
        throw err;
      }
      const usable = new Set(candidates);
      const missing = hosts.filter((h) => h.listed && (h.node === null || !usable.has(h.node)));
      if (missing.length > 0) {
        const shown = missing
          .slice(0, 8)
          .map(
            (h) => `${h.host} (${h.agent === 'none' ? 'no agent' : h.agent === 'ready' ? 'no facts yet' : h.agent})`,
          );
        const more = missing.length > 8 ? ` and ${missing.length - 8} more` : '';
        throw new PlanError(
          PlanErrorCode.UnknownNode,
          `--group ${group} selects ${agree(missing.length, 'a host', 'hosts')} without a ready agent: ${shown.join(', ')}${more}; ` +
            (missing.length <= 8
              ? `leave them out with --group '${[group, ...missing.map((h) => `!${h.host}`)].join(':')}'`
              : 'leave them out with ":!host" terms'),
        );
      }
      return hosts.flatMap((h) => (h.node !== null && usable.has(h.node) ? [h.node] : []));
    };
  }

  private doc(): InventoryDoc {
    return this.stored?.doc ?? emptyInventory();
  }

  private snapshot(): Snapshot {
    const doc = this.doc();
    const nodes = this.registry.list();
    const index = indexNodes(nodes);
    const memberships = hostMemberships(doc);
    const hosts = new Map<string, { node: string | null; vars: Vars; groups: string[] }>();
    const listed = new Set<string>();
    for (const [name, m] of memberships) {
      const node = nodeForHost(name, m.vars, index);
      if (node !== null) listed.add(node);
      hosts.set(name, { node, vars: m.vars, groups: m.groups });
    }
    const unlisted = nodes
      .map((n) => n.name)
      .filter((n) => !listed.has(n) && !hosts.has(n))
      .sort(naturalCompare);
    for (const name of unlisted) hosts.set(name, { node: name, vars: {}, groups: [] });
    const order = [...hosts.keys()];
    const groups = new Map<string, string[]>();
    for (const name of Object.keys(doc.groups)) groups.set(name, groupMembers(doc, name));
    groups.set(ALL, order);
    groups.set(UNGROUPED, [...(groups.get(UNGROUPED) ?? []), ...unlisted]);
    const universe: PatternUniverse = {
      hosts: order,
      groups,
      attributes: (host) => {
        const h = hosts.get(host);
        const labels = h?.node ? (index.byName.get(h.node)?.labels ?? {}) : {};
        return { ...labels, ...h?.vars };
      },
    };
    return { universe, hosts, index, unlisted };
  }
}
