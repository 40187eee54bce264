// Persistence of the node registry. The in-memory registry is the source of truth
// while the controller runs; this repo is what survives a restart.
import type { Facts, NodeState } from '@rankd/protocol';
import type { Db } from './database.js';

export interface NodeRecord {
  name: string;
  labels: Record<string, string>;
  address: string | null;
  version: string | null;
  capabilities: string[];
  firstSeen: number;
  lastSeen: number;
  state: NodeState;
  stateReason: string;
  facts: Facts | null;
  factsHash: string | null;
  drain: NodeDrainRecord | null;
}

export interface NodeDrainRecord {
  reason: string;
  by: string | null;
  at: number;
}

interface Row {
  name: string;
  labels: string;
  address: string | null;
  version: string | null;
  capabilities: string;
  first_seen: number;
  last_seen: number;
  state: string;
  state_reason: string;
  facts: string | null;
  facts_hash: string | null;
  drain_reason: string | null;
  drain_by: string | null;
  drain_at: number | null;
}

export class NodesRepo {
  private readonly upsertStmt;
  private readonly touchStmt;
  private readonly stateStmt;
  private readonly factsStmt;
  private readonly drainStmt;
  private readonly allStmt;
  readonly touchMany: (entries: ReadonlyArray<readonly [string, number]>) => void;

  constructor(db: Db) {
    this.upsertStmt = db.prepare(`
      INSERT INTO nodes (name, labels, address, version, capabilities, first_seen, last_seen, state, state_reason, facts, facts_hash)
      VALUES (@name, @labels, @address, @version, @capabilities, @firstSeen, @lastSeen, @state, @stateReason, @facts, @factsHash)
      ON CONFLICT(name) DO UPDATE SET labels = excluded.labels, address = excluded.address, version = excluded.version,
        capabilities = excluded.capabilities, last_seen = excluded.last_seen, state = excluded.state,
        state_reason = excluded.state_reason,
        facts = COALESCE(excluded.facts, nodes.facts), facts_hash = COALESCE(excluded.facts_hash, nodes.facts_hash)`);
    this.touchStmt = db.prepare(
      'INSERT INTO node_seen (name, last_seen) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen',
    );
    this.stateStmt = db.prepare('UPDATE nodes SET state = ?, state_reason = ? WHERE name = ?');
    this.factsStmt = db.prepare('UPDATE nodes SET facts = ?, facts_hash = ? WHERE name = ?');
    this.drainStmt = db.prepare('UPDATE nodes SET drain_reason = ?, drain_by = ?, drain_at = ? WHERE name = ?');
    // a heartbeat's time (node_seen) or the last connect's (nodes), whichever is later
    this.allStmt = db.prepare(`SELECT nodes.*, max(nodes.last_seen, coalesce(node_seen.last_seen, 0)) AS last_seen
      FROM nodes LEFT JOIN node_seen ON node_seen.name = nodes.name ORDER BY nodes.name`);
    // Heartbeats are batched: one transaction per flush, not one fsync per beat.
    this.touchMany = db.transaction((entries: ReadonlyArray<readonly [string, number]>) => {
      for (const [name, at] of entries) this.touchStmt.run(name, at);
    });
  }

  upsert(node: NodeRecord): void {
    const { drain: _drain, ...rest } = node; // drains are written by setDrain alone
    this.upsertStmt.run({
      ...rest,
      labels: JSON.stringify(node.labels),
      capabilities: JSON.stringify(node.capabilities),
      facts: node.facts ? JSON.stringify(node.facts) : null,
    });
  }

  setState(name: string, state: NodeState, reason: string): void {
    this.stateStmt.run(state, reason, name);
  }

  setDrain(name: string, drain: NodeDrainRecord | null): void {
    this.drainStmt.run(drain?.reason ?? null, drain?.by ?? null, drain?.at ?? null, name);
  }

  setFacts(name: string, facts: Facts, hash: string): void {
    this.factsStmt.run(JSON.stringify(facts), hash, name);
  }

  all(): NodeRecord[] {
    return (this.allStmt.all() as Row[]).map((r) => ({
      name: r.name,
      labels: JSON.parse(r.labels) as Record<string, string>,
      address: r.address,
      version: r.version,
      capabilities: JSON.parse(r.capabilities) as string[],
      firstSeen: r.first_seen,
      lastSeen: r.last_seen,
      state: r.state as NodeState,
      stateReason: r.state_reason,
      facts: r.facts ? (JSON.parse(r.facts) as Facts) : null,
      factsHash: r.facts_hash,
      drain: r.drain_reason !== null ? { reason: r.drain_reason, by: r.drain_by, at: r.drain_at ?? 0 } : null,
    }));
  }
}
