// The allocation ledger: which job holds which cores and GPUs of which node, and what
// is left. The planner plans on the "free facts" of a node: its facts with the held
// threads taken out of the allowed CPUs and the held GPUs out of the GPU list, so the
// planner itself needs no notion of other jobs.
//
// A scheduling pass works on a copy (`clone()`): it can try placements, and release
// running jobs to see when the head of the queue would fit, without touching the truth.
import type { Facts } from '@rankd/protocol';
import type { Allocation } from '@rankd/planner';

export interface HeldJob {
  id: string;
  alloc: Allocation;
  /** When its time limit ends it, in ms since the epoch; Infinity without a limit. */
  endsAt: number;
}

interface NodeHold {
  cpus: Set<number>;
  gpus: Set<number>;
  /** Jobs on the node, --share ones included. */
  jobs: Set<string>;
  exclusive: boolean;
  /** Bumped on every change, so cached free facts know they are stale. */
  version: number;
}

export class AllocationLedger {
  private readonly holds = new Map<string, NodeHold>();
  readonly jobs = new Map<string, HeldJob>();
  private readonly freeCache = new Map<string, { facts: Facts; version: number; free: Facts }>();

  hold(job: HeldJob): void {
    if (this.jobs.has(job.id)) return;
    this.jobs.set(job.id, job);
    for (const [name, part] of Object.entries(job.alloc.nodes)) {
      const h = this.nodeHold(name);
      for (const cpu of part.cpus) h.cpus.add(cpu);
      for (const gpu of part.gpus) h.gpus.add(gpu);
      h.jobs.add(job.id);
      if (job.alloc.mode === 'exclusive') h.exclusive = true;
      h.version++;
    }
  }

  release(id: string): HeldJob | undefined {
    const job = this.jobs.get(id);
    if (!job) return undefined;
    this.jobs.delete(id);
    for (const [name, part] of Object.entries(job.alloc.nodes)) {
      const h = this.holds.get(name);
      if (!h) continue;
      for (const cpu of part.cpus) h.cpus.delete(cpu);
      for (const gpu of part.gpus) h.gpus.delete(gpu);
      h.jobs.delete(id);
      if (job.alloc.mode === 'exclusive') h.exclusive = false;
      h.version++;
      if (h.jobs.size === 0) this.holds.delete(name);
    }
    return job;
  }

  /** No job at all on the node, --share ones included: what --exclusive needs. */
  isIdle(node: string): boolean {
    return !this.holds.has(node);
  }

  isExclusive(node: string): boolean {
    return this.holds.get(node)?.exclusive ?? false;
  }

  heldCpus(node: string): number {
    return this.holds.get(node)?.cpus.size ?? 0;
  }

  heldGpus(node: string): number {
    return this.holds.get(node)?.gpus.size ?? 0;
  }

  jobsOn(node: string): readonly string[] {
    return [...(this.holds.get(node)?.jobs ?? [])];
  }

  /** The node's facts less what jobs hold; the same object when nothing is held, so topology caches still hit. */
  freeFacts(node: string, facts: Facts): Facts {
    const h = this.holds.get(node);
    if (!h || (h.cpus.size === 0 && h.gpus.size === 0)) return facts;
    const cached = this.freeCache.get(node);
    if (cached && cached.facts === facts && cached.version === h.version) return cached.free;
    const free: Facts = {
      ...facts,
      cpu: { ...facts.cpu, allowed: facts.cpu.allowed.filter((c) => !h.cpus.has(c)) },
      gpus: facts.gpus.filter((g) => !h.gpus.has(g.index)),
    };
    this.freeCache.set(node, { facts, version: h.version, free });
    return free;
  }

  /** A copy to try things on; free-facts caches are shared (they are keyed by version). */
  clone(): AllocationLedger {
    const copy = new AllocationLedger();
    for (const [name, h] of this.holds) {
      copy.holds.set(name, {
        cpus: new Set(h.cpus),
        gpus: new Set(h.gpus),
        jobs: new Set(h.jobs),
        exclusive: h.exclusive,
        version: h.version,
      });
    }
    for (const [id, job] of this.jobs) copy.jobs.set(id, job);
    for (const [name, c] of this.freeCache) copy.freeCache.set(name, c);
    return copy;
  }

  private nodeHold(name: string): NodeHold {
    let h = this.holds.get(name);
    if (!h) {
      // a node's version keeps growing across empty spells: a stale cache entry never matches
      h = {
        cpus: new Set(),
        gpus: new Set(),
        jobs: new Set(),
        exclusive: false,
        version: (this.freeCache.get(name)?.version ?? 0) + 1,
      };
      this.holds.set(name, h);
    }
    return h;
  }
}
