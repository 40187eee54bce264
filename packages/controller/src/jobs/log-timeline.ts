// One attempt's stored output chunks in the order the controller stored them (the ids of
// their `rank.output` events, whose subjects are "<attemptId>/<rank>"), for
// `GET /v1/jobs/:id/logs?order=time`.
//
// What was stored before the reader came is merged from one query per rank, each served by
// the events' (subject, id) index in order: a job's 200,000 chunks take one pass, not a sort
// per page. What arrives later is read job-wide from the newest events on, by primary key.
import type { EventsRepo, OutputEvent } from '../store/events-repo.js';

/** Rows kept per rank at a time: few ranks read in large pages, many ranks in small ones. */
function pageFor(ranks: number): number {
  return Math.max(16, Math.min(512, Math.floor(65_536 / Math.max(1, ranks))));
}

interface RankSource {
  rank: number;
  rows: OutputEvent[];
  /** The id of the last row read: the next page starts after it. */
  after: number;
  /** The last page was short: the rank has nothing more up to the horizon. */
  drained: boolean;
}

export class LogTimeline {
  /** Events up to here are merged rank by rank; later ones are read job-wide. */
  private readonly horizon: number;
  private readonly page: number;
  /** Ranks with rows left before the horizon, as a binary heap on their next row's id. */
  private heap: RankSource[] | null = null;
  private live: OutputEvent[] = [];
  private liveAfter: number;

  constructor(
    private readonly events: EventsRepo,
    /** The attempt's id (job-records.ts attemptId): the job's id for its first attempt. */
    private readonly jobId: string,
    private readonly ranks: readonly number[],
  ) {
    this.horizon = events.lastId();
    this.liveAfter = this.horizon;
    this.page = pageFor(ranks.length);
  }

  /** The next chunk stored, or null when none is stored yet (a followed job may store more). */
  next(): OutputEvent | null {
    this.heap ??= this.ranks
      .map((rank) => this.fill({ rank, rows: [], after: 0, drained: false }))
      .filter((s) => s.rows.length > 0)
      .sort((a, b) => a.rows[0]!.id - b.rows[0]!.id);
    if (this.heap.length > 0) return this.popStored(this.heap);
    if (this.live.length === 0) {
      this.live = this.events.jobOutputsAfter(this.jobId, this.liveAfter, this.page);
      if (this.live.length > 0) this.liveAfter = this.live[this.live.length - 1]!.id;
    }
    return this.live.shift() ?? null;
  }

  private popStored(heap: RankSource[]): OutputEvent {
    const top = heap[0]!;
    const event = top.rows.shift()!;
    if (top.rows.length === 0 && !top.drained) this.fill(top);
    if (top.rows.length === 0) {
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        siftDown(heap, 0);
      }
    } else {
      siftDown(heap, 0);
    }
    return event;
  }

  private fill(source: RankSource): RankSource {
    source.rows = this.events.rankOutputs(this.jobId, source.rank, source.after, this.horizon, this.page);
    if (source.rows.length > 0) source.after = source.rows[source.rows.length - 1]!.id;
    source.drained = source.rows.length < this.page;
    return source;
  }
}

function siftDown(heap: RankSource[], i: number): void {
  const key = (s: RankSource) => s.rows[0]!.id;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let min = i;
    if (l < heap.length && key(heap[l]!) < key(heap[min]!)) min = l;
    if (r < heap.length && key(heap[r]!) < key(heap[min]!)) min = r;
    if (min === i) return;
    [heap[i], heap[min]] = [heap[min]!, heap[i]!];
    i = min;
  }
}
