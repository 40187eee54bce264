// The controller's scheduler: the queue of waiting jobs, the ledger of what running
// jobs hold, and the passes that start what fits. Passes run on submit (at once, so
// that a job that fits starts in the same request), and, coalesced into one per tick,
// whenever resources may have freed: a job ended, a node became ready or was resumed.
import type { PlannerNode, PlanOptions, Allocation } from '@rankd/planner';
import { naturalCompare } from '@rankd/protocol/natural-order';
import type { DrainedNode } from './drained.js';
import { AllocationLedger } from './ledger.js';
import type { UserLimits } from './limits.js';
import type { QueuedJob } from './placement.js';
import { queueOrder, schedulingPass, type PassResult, type RunningUsage, type Start } from './scheduling-pass.js';

export interface SchedulerHost {
  /** Ready, undrained nodes. */
  nodes(): PlannerNode[];
  /** Nodes that would be ready but for a drain. */
  drained(): DrainedNode[];
  planOptions(): PlanOptions;
  usageOf(id: string): RunningUsage | undefined;
  /** Starts a queued job on this rank map; the scheduler has already recorded its hold. */
  start(start: Start): void;
  /** A queued job's reason to wait, whenever a pass gives one (the host writes only changes). */
  waiting(id: string, reason: string): void;
  /** The time a pass judges by: the host's clock, which also set the queued jobs' notBefore. */
  now(): number;
}

export class Scheduler {
  readonly ledger = new AllocationLedger();
  private readonly queue = new Map<string, QueuedJob>();
  private ordered: QueuedJob[] | null = null;
  private scheduled = false;
  /** Wall time of the last pass, for /metrics and the bench. */
  lastPassMs = 0;

  constructor(
    private readonly host: SchedulerHost,
    readonly limits: UserLimits = {},
  ) {}

  /** Restores or records a running job's hold. */
  hold(id: string, alloc: Allocation, endsAt: number): void {
    this.ledger.hold({ id, alloc, endsAt });
  }

  /** A job ended: its cores and GPUs are free; a pass follows. */
  release(id: string): void {
    if (this.ledger.release(id)) this.schedule();
  }

  enqueue(job: QueuedJob): void {
    this.queue.set(job.id, job);
    this.ordered = null;
  }

  dequeue(id: string): QueuedJob | undefined {
    const job = this.queue.get(id);
    if (job) {
      this.queue.delete(id);
      this.ordered = null;
      this.schedule();
    }
    return job;
  }

  queued(id: string): QueuedJob | undefined {
    return this.queue.get(id);
  }

  /** Queued jobs in the order they will be considered. */
  order(): readonly QueuedJob[] {
    return (this.ordered ??= [...this.queue.values()].sort(queueOrder));
  }

  /** Would `job` start if submitted now? A pass on copies, for --immediate and `rankd plan`. */
  tryNow(job: QueuedJob): { starts: boolean; reason: string | null; start?: Start } {
    const result = this.pass([...this.order(), job].sort(queueOrder));
    const start = result.starts.find((s) => s.job.id === job.id);
    return start
      ? { starts: true, reason: null, start }
      : { starts: false, reason: result.waits.get(job.id) ?? 'waits in the queue' };
  }

  /** Runs a pass now and applies it. */
  run(): PassResult {
    this.scheduled = false;
    const result = this.pass(this.order());
    for (const s of result.starts) {
      this.queue.delete(s.job.id);
      this.ordered = null;
      this.ledger.hold({ id: s.job.id, alloc: s.alloc, endsAt: s.endsAt });
    }
    for (const s of result.starts) this.host.start(s);
    for (const [id, reason] of result.waits) if (this.queue.has(id)) this.host.waiting(id, reason);
    return result;
  }

  /** A pass on the next tick, coalescing every reason to run one that arrives meanwhile. */
  schedule(): void {
    if (this.scheduled || this.queue.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      if (this.scheduled) this.run();
    });
  }

  private pass(queue: readonly QueuedJob[]): PassResult {
    const t0 = performance.now();
    const nodes = this.host.nodes().sort((a, b) => naturalCompare(a.name, b.name));
    const result = schedulingPass({
      queue,
      ledger: this.ledger,
      nodes,
      drained: this.host.drained(),
      options: this.host.planOptions(),
      limits: this.limits,
      usageOf: (id) => this.host.usageOf(id),
      now: this.host.now(),
    });
    this.lastPassMs = performance.now() - t0;
    return result;
  }
}
