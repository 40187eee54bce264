// One job's PMI key-value space on this node: what its ranks have put, what has become
// visible through fences, and the barrier that gathers the local ranks before a fence.
//
// PMI-1 semantics: a put is visible to the job after the next barrier, not before. So
// puts wait here until every local rank of the job has entered `barrier_in`; then this
// node's puts of the epoch go up to the controller in one fence, and the ranks get
// `barrier_out` once the controller answers with every node's puts of that epoch (or,
// for a large job, with how many chunks to pull when a rank first asks for a key we
// lack).
import type { PmiJobSpec, PmiPairs } from '@rankd/protocol';

/** How a job's fences reach the other nodes: the controller link, behind an interface so a tree can replace the star. */
export interface FenceTransport {
  /** Sends this node's puts of `epoch`; false when the link is down (the fence is re-sent once it is up). */
  fence(jobId: string, epoch: number, pairs: PmiPairs): boolean;
  /** Pulls one chunk of an epoch's merged puts. */
  fetch(jobId: string, epoch: number, chunk: number): Promise<PmiPairs>;
}

export class PmiJobError extends Error {
  override readonly name = 'PmiJobError';
}

/** An epoch not applied yet: its chunks still at the controller, or inline pairs that must wait for an earlier lazy epoch. */
type DeferredEpoch = { epoch: number; chunks: number } | { epoch: number; pairs: PmiPairs };

export class PmiJob {
  /** Visible to every rank: what fences have delivered, plus what the launcher provides. */
  private readonly visible = new Map<string, string>();
  /** This epoch's puts of the local ranks, in order. */
  private pending: Array<[string, string]> = [];
  private epoch = 0;
  /** Local ranks in the barrier of the current epoch. */
  private readonly entered = new Set<number>();
  private waiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  /** Set while this node's fence of the current epoch waits for the controller's answer. */
  private fenceSent = false;
  /** Epochs to apply, in order, before a key that is not visible is judged missing. */
  private deferred: DeferredEpoch[] = [];
  private pulling: Promise<void> | null = null;
  private failure: Error | null = null;

  constructor(
    readonly jobId: string,
    readonly spec: PmiJobSpec,
    /** The job's ranks on this node: all of them enter each barrier. */
    readonly localRanks: ReadonlySet<number>,
    private readonly transport: FenceTransport,
  ) {
    if (spec.processMapping !== null) this.visible.set('PMI_process_mapping', spec.processMapping);
  }

  /** The KVS name ranks see (PMI-1 allows 64 bytes; job ids are shorter and have no spaces). */
  get kvsname(): string {
    return this.jobId;
  }

  put(key: string, value: string): void {
    this.check();
    this.pending.push([key, value]);
  }

  /** The value visible to the job under `key`, pulling lazily delivered epochs first; undefined when nobody put it. */
  async get(key: string): Promise<string | undefined> {
    this.check();
    const value = this.visible.get(key);
    if (value !== undefined || this.deferred.length === 0) return value;
    await this.applyDeferred();
    return this.visible.get(key);
  }

  /** Enters the barrier of the current epoch for `rank`; resolves at barrier_out. */
  barrier(rank: number): Promise<void> {
    this.check();
    if (!this.localRanks.has(rank))
      return Promise.reject(new PmiJobError(`rank ${rank} is not a rank of job ${this.jobId} on this node`));
    if (this.entered.has(rank))
      return Promise.reject(new PmiJobError(`rank ${rank} entered barrier ${this.epoch} twice`));
    this.entered.add(rank);
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (this.entered.size === this.localRanks.size) this.sendFence();
    return done;
  }

  /** Re-sends a fence the controller has not answered (after the link came back). */
  resendFence(): void {
    if (this.fenceSent) this.sendFence();
  }

  /** The controller's answer to the current epoch's fence. */
  fenced(epoch: number, pairs: PmiPairs | undefined, chunks: number): void {
    // an answer to an epoch already closed (the fence was re-sent after a reconnect) changes nothing
    if (epoch !== this.epoch || !this.fenceSent || this.failure) return;
    // a later epoch overrides an earlier one, so nothing is applied ahead of a deferred epoch
    if (pairs && this.deferred.length === 0) this.apply(pairs);
    else if (pairs) this.deferred.push({ epoch, pairs });
    else if (chunks > 0) this.deferred.push({ epoch, chunks });
    this.epoch++;
    this.pending = [];
    this.entered.clear();
    this.fenceSent = false;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve();
  }

  /** Ends the job's PMI here: ranks blocked in a barrier or a get are answered with an error. */
  fail(reason: string): void {
    if (this.failure) return;
    this.failure = new PmiJobError(reason);
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(this.failure);
  }

  private sendFence(): void {
    this.fenceSent = true;
    // false: the link is down; the server re-sends every unanswered fence when it is up again
    this.transport.fence(this.jobId, this.epoch, this.pending);
  }

  private apply(pairs: PmiPairs): void {
    for (const [k, v] of pairs) this.visible.set(k, v);
  }

  private applyDeferred(): Promise<void> {
    this.pulling ??= (async () => {
      try {
        while (this.deferred.length > 0) {
          const next = this.deferred[0]!;
          if ('pairs' in next) this.apply(next.pairs);
          else
            for (let chunk = 0; chunk < next.chunks; chunk++)
              this.apply(await this.transport.fetch(this.jobId, next.epoch, chunk));
          this.deferred.shift();
        }
      } finally {
        this.pulling = null;
      }
    })();
    return this.pulling;
  }

  private check(): void {
    if (this.failure) throw this.failure;
  }
}
