// The scheduler's promise, checked from a controller's event history alone.

interface AllocationEvent {
  id: number;
  kind: string;
  subject: string;
  data: Record<string, unknown>;
}

interface Held {
  mode: string;
  nodes: Record<string, { cpus: number[]; gpus: number[] }>;
}

/**
 * Replays job.allocated and job.released and returns every moment two jobs held one CPU
 * or GPU of one node (--share jobs hold nothing), or an --exclusive job shared its node
 * with another job that was not --share. Empty when the scheduler kept its word.
 */
export function allocationOverlaps(events: readonly AllocationEvent[]): string[] {
  const held = new Map<string, Held>();
  const found: string[] = [];
  for (const e of [...events].sort((a, b) => a.id - b.id)) {
    if (e.kind === 'job.released') held.delete(e.subject);
    if (e.kind !== 'job.allocated') continue;
    const mine = e.data as unknown as Held;
    for (const [other, theirs] of held) {
      for (const [node, part] of Object.entries(mine.nodes)) {
        const o = theirs.nodes[node];
        if (!o) continue;
        const exclusive = mine.mode === 'exclusive' || theirs.mode === 'exclusive';
        if (exclusive && mine.mode !== 'share' && theirs.mode !== 'share')
          found.push(`event ${e.id}: ${e.subject} and ${other} both on ${node}, one --exclusive`);
        const cpus = part.cpus.filter((c) => o.cpus.includes(c));
        const gpus = part.gpus.filter((g) => o.gpus.includes(g));
        if (cpus.length > 0 || gpus.length > 0)
          found.push(
            `event ${e.id}: ${e.subject} and ${other} both hold ${node} cpus [${cpus.join(',')}] gpus [${gpus.join(',')}]`,
          );
      }
    }
    held.set(e.subject, mine);
  }
  return found;
}
