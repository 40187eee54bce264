// MASTER_PORT for jobs that name none: the planner is pure, so the controller picks.
// Two live jobs whose rank 0 shares a node must not both listen on 29500.
import { DEFAULT_MASTER_PORT } from '@rankd/planner';

export class MasterPorts {
  private readonly inUse = new Map<string, Set<number>>();

  pick(node: string): number {
    const used = this.inUse.get(node);
    let port = DEFAULT_MASTER_PORT;
    while (used?.has(port)) port++;
    return port;
  }

  hold(node: string, port: number): void {
    let set = this.inUse.get(node);
    if (!set) this.inUse.set(node, (set = new Set()));
    set.add(port);
  }

  release(node: string, port: number): void {
    this.inUse.get(node)?.delete(port);
  }
}
