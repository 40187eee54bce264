// The live node registry: who is connected, who is late, who is lost.
//
// The in-memory map is authoritative while the controller runs; every state change
// is written through to the store and the event log, while heartbeat times are
// flushed in batches (2,000 agents beating every 5 s would otherwise be 400 fsyncs/s).
import { EventEmitter } from 'node:events';
import type { ControllerMessage, Facts, Hello, NodeState, NodeView } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { EventsRepo } from '../store/events-repo.js';
import type { NodeRecord, NodesRepo } from '../store/nodes-repo.js';
import type { FleetTiming } from './timing.js';

/** What the registry needs from a live agent connection. */
export interface AgentLink {
  readonly remoteAddress: string | null;
  send(message: ControllerMessage): boolean;
  /** Sends a message encoded once for many links (the same bytes to every node of a fence). */
  sendEncoded(frame: Buffer): boolean;
  close(code: number, reason: string): void;
}

interface LiveNode extends NodeRecord {
  link: AgentLink | null;
}

export interface NodeStateChange {
  name: string;
  from: NodeState;
  to: NodeState;
  reason: string;
}

/** `changed`: the node may now take ranks it could not before (registered, reconnected, resumed, new facts). */
/** `drained`: the node takes no new ranks; queued jobs' reasons may change. */
export class NodeRegistry extends EventEmitter<{
  state: [NodeStateChange];
  facts: [string];
  changed: [string];
  drained: [string];
}> {
  private readonly nodes = new Map<string, LiveNode>();
  private readonly dirtyLastSeen = new Set<string>();
  private graceUntil = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly repo: NodesRepo,
    private readonly events: EventsRepo,
    readonly timing: FleetTiming,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  /** Restores the registry from the store and opens the restart grace period. */
  load(): void {
    this.graceUntil = this.now() + this.timing.restartGraceMs;
    for (const record of this.repo.all()) {
      this.nodes.set(record.name, { ...record, link: null });
    }
    if (this.nodes.size > 0) {
      this.log.info(
        { nodes: this.nodes.size, graceMs: this.timing.restartGraceMs },
        'restored node registry; grace period open',
      );
    }
  }

  start(): void {
    const tick = Math.max(50, Math.min(1000, Math.floor(this.timing.heartbeatMs / 2)));
    this.timer = setInterval(() => this.sweep(), tick);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.flush();
  }

  /** A valid hello arrived: the node is (again) ready. A previous link for the same name is superseded. */
  register(hello: Hello, link: AgentLink, factsHash: string | null): { superseded: AgentLink | null } {
    const at = this.now();
    const existing = this.nodes.get(hello.name);
    const superseded = existing?.link && existing.link !== link ? existing.link : null;
    const node: LiveNode = {
      name: hello.name,
      labels: hello.labels,
      address: hello.address ?? link.remoteAddress,
      version: hello.version,
      capabilities: hello.capabilities,
      firstSeen: existing?.firstSeen ?? at,
      lastSeen: at,
      state: existing?.state ?? 'ready',
      stateReason: existing?.stateReason ?? '',
      facts: hello.facts ?? existing?.facts ?? null,
      factsHash: hello.facts ? factsHash : (existing?.factsHash ?? null),
      drain: existing?.drain ?? null,
      link,
    };
    this.nodes.set(node.name, node);
    this.repo.upsert(node);
    if (!existing) this.events.append('node.registered', node.name, { address: node.address });
    this.transition(node, 'ready', existing ? 'agent reconnected' : 'agent registered');
    this.emit('changed', node.name);
    return { superseded };
  }

  heartbeat(name: string): void {
    const node = this.nodes.get(name);
    if (!node) return;
    node.lastSeen = this.now();
    this.dirtyLastSeen.add(name);
    if (node.state !== 'ready') this.transition(node, 'ready', 'heartbeat resumed');
  }

  /** The link closed. The node stays as it is until its TTL runs out: agents restart and reconnect. */
  disconnected(name: string, link: AgentLink, why: string): void {
    const node = this.nodes.get(name);
    if (!node || node.link !== link) return;
    node.link = null;
    node.stateReason = `connection closed: ${why}`;
    this.repo.setState(name, node.state, node.stateReason);
    this.events.append('node.disconnected', name, { why });
  }

  updateFacts(name: string, facts: Facts, hash: string): void {
    const node = this.nodes.get(name);
    if (!node) return;
    node.facts = facts;
    node.factsHash = hash;
    this.repo.setFacts(name, facts, hash);
    this.events.append('node.facts', name, { hash });
    this.emit('facts', name);
    this.emit('changed', name);
  }

  get(name: string): (Readonly<NodeRecord> & { connected: boolean }) | undefined {
    const node = this.nodes.get(name);
    return node && { ...node, connected: node.link !== null };
  }

  link(name: string): AgentLink | null {
    return this.nodes.get(name)?.link ?? null;
  }

  /** Ready, connected, undrained nodes with facts: where the planner may place ranks. */
  candidates(): Array<{ name: string; address: string | null; facts: Facts }> {
    const out: Array<{ name: string; address: string | null; facts: Facts }> = [];
    for (const n of this.nodes.values()) {
      if (this.whyNotCandidate(n) === null) out.push({ name: n.name, address: n.address, facts: n.facts! });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Nodes that would be candidates but for a drain, with its reason: jobs that fit only there wait on it. */
  drained(): Array<{ name: string; address: string | null; facts: Facts; drain: string }> {
    const out: Array<{ name: string; address: string | null; facts: Facts; drain: string }> = [];
    for (const n of this.nodes.values()) {
      if (n.drain && this.whyNotCandidate({ ...n, drain: null }) === null)
        out.push({ name: n.name, address: n.address, facts: n.facts!, drain: n.drain.reason });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Why a known node is not a candidate now (drained, unreachable, …), for errors that name it; null for a candidate or an unknown name. */
  unavailable(name: string): string | null {
    const node = this.nodes.get(name);
    return node ? this.whyNotCandidate(node) : null;
  }

  /** Drains a node: no new rank goes to it; running ranks go on. Draining again replaces the reason. */
  drain(name: string, reason: string, by: string | null): NodeView | null {
    const node = this.nodes.get(name);
    if (!node) return null;
    node.drain = { reason, by, at: this.now() };
    this.repo.setDrain(name, node.drain);
    this.events.append('node.drained', name, { reason, by });
    this.log.info({ node: name, reason, by }, 'node drained');
    this.emit('drained', name);
    return toView(node);
  }

  /** Ends a drain: the node takes new ranks again. */
  resume(name: string, by: string | null): NodeView | null {
    const node = this.nodes.get(name);
    if (!node) return null;
    if (node.drain) {
      node.drain = null;
      this.repo.setDrain(name, null);
      this.events.append('node.resumed', name, { by });
      this.log.info({ node: name, by }, 'node resumed');
      this.emit('changed', name);
    }
    return toView(node);
  }

  private whyNotCandidate(n: LiveNode): string | null {
    if (n.drain) return `drained: ${n.drain.reason}`;
    if (n.state !== 'ready') return n.state;
    if (!n.link) return 'its agent is not connected';
    if (!n.facts) return 'no facts reported yet';
    return null;
  }

  /** Every known node's name, link state and last facts (null before its first report), unsorted: read by the scrape-time gauges of /metrics. */
  *factsByNode(): IterableIterator<{ name: string; connected: boolean; facts: Facts | null }> {
    for (const n of this.nodes.values()) yield { name: n.name, connected: n.link !== null, facts: n.facts };
  }

  list(): NodeView[] {
    return [...this.nodes.values()].sort((a, b) => a.name.localeCompare(b.name)).map(toView);
  }

  /** Applies the TTL and lost deadlines. Public so tests and the clock-driven timer share one path. */
  sweep(at = this.now()): void {
    for (const node of this.nodes.values()) {
      // Inside the restart grace period nobody is judged; after it, TTLs count from its end.
      const seen = Math.max(node.lastSeen, this.graceUntil - this.timing.ttlMs);
      if (at < this.graceUntil) continue;
      if (node.state !== 'lost' && at - seen >= this.timing.lostAfterMs) {
        this.transition(node, 'lost', `no heartbeat for ${Math.round((at - node.lastSeen) / 1000)} s`);
      } else if (node.state === 'ready' && at - seen >= this.timing.ttlMs) {
        this.transition(node, 'unreachable', `no heartbeat for ${Math.round((at - node.lastSeen) / 1000)} s`);
      }
    }
    this.flush();
  }

  /** Writes batched heartbeat times. */
  flush(): void {
    if (this.dirtyLastSeen.size === 0) return;
    const entries: Array<[string, number]> = [];
    for (const name of this.dirtyLastSeen) {
      const node = this.nodes.get(name);
      if (node) entries.push([name, node.lastSeen]);
    }
    this.dirtyLastSeen.clear();
    this.repo.touchMany(entries);
  }

  private transition(node: LiveNode, to: NodeState, reason: string): void {
    const from = node.state;
    node.stateReason = reason;
    if (from === to) {
      this.repo.setState(node.name, to, reason);
      return;
    }
    node.state = to;
    this.repo.setState(node.name, to, reason);
    this.events.append('node.state', node.name, { from, to, reason });
    this.log.info({ node: node.name, from, to, reason }, 'node state');
    this.emit('state', { name: node.name, from, to, reason });
    if (to === 'ready') this.emit('changed', node.name);
  }
}

function toView(node: LiveNode): NodeView {
  return {
    name: node.name,
    state: node.state,
    connected: node.link !== null,
    address: node.address,
    labels: node.labels,
    version: node.version,
    capabilities: node.capabilities,
    cpus: node.facts ? node.facts.cpu.pus : null,
    numaNodes: node.facts ? node.facts.numa.nodes.length : null,
    firstSeen: new Date(node.firstSeen).toISOString(),
    lastSeen: new Date(node.lastSeen).toISOString(),
    stateReason: node.stateReason,
    drain: node.drain
      ? { reason: node.drain.reason, by: node.drain.by, at: new Date(node.drain.at).toISOString() }
      : null,
  };
}
