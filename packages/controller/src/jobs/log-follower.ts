// One reader of one attempt's output: stored bytes first, then live ones as they arrive.
// Each attempt of a job writes its own files (its attempt id's), so a reader of several
// attempts (api/routes/log-attempts.ts) runs one follower per attempt, in turn.
//
// The log files are the buffer. A follower holds only a cursor per rank and stream
// and reads the next chunk when its sink has room, so a slow reader costs nothing
// but its own lag: it never slows the ranks, the agents or the other readers.
import { cursorKey, encodeCursors, type LogCursor } from '@rankd/protocol/log-cursor';
import type { StreamName } from '@rankd/protocol';
import type { JobManager } from './job-manager.js';
import { LogTimeline } from './log-timeline.js';

// large enough that per-record costs (headers, syscalls) vanish next to the bytes
const CHUNK_BYTES = 256 * 1024;

export interface LogChunk {
  rank: number;
  stream: StreamName;
  offset: number;
  data: Buffer;
  /** When the controller stored the chunk (ms since the epoch); in time order only. */
  at?: number;
}

/**
 * stream: each stream in large chunks, round robin (the fastest for bulk reads); time: the
 * chunks of all streams in the order the controller stored them, each with its time.
 */
export type LogOrder = 'stream' | 'time';

export interface LogSink {
  /**
   * Returns false when the sink is full; the follower then waits for `drain`. `cursor`
   * gives the resume token after this chunk; it costs O(streams), so only sinks that
   * send it per record (SSE ids) call it.
   */
  write(chunk: LogChunk, cursor: () => string): boolean;
  onDrain(resume: () => void): void;
}

/**
 * The follower delivered what it had to: `over` when the attempt's ranks are all gone (every
 * byte it wrote was delivered), false when a reader that does not follow reached the end of
 * what is stored so far.
 */
export type FollowerDone = (over: boolean) => void;

export type Cursor = LogCursor;

export class LogFollower {
  private unsubscribe: (() => void) | null = null;
  private scheduled = false;
  private waitingForDrain = false;
  private stopped = false;
  private readonly onEnded = (id: string) => id === this.attemptId && this.schedule();
  /** Time order: the attempt's stored chunks, in the order they were stored. */
  private readonly timeline: LogTimeline | null;
  private readonly cursorOf: Map<string, Cursor>;

  constructor(
    private readonly jobs: JobManager,
    /** The id the attempt's agents knew it by (job-records.ts attemptId): its files' and events' key. */
    private readonly attemptId: string,
    private readonly cursors: Cursor[],
    private readonly sink: LogSink,
    private readonly follow: boolean,
    private readonly order: LogOrder,
    private readonly done: FollowerDone,
  ) {
    this.cursorOf = new Map(cursors.map((c) => [cursorKey(c.rank, c.stream), c]));
    this.timeline =
      order === 'time' ? new LogTimeline(jobs.events, attemptId, [...new Set(cursors.map((c) => c.rank))]) : null;
  }

  start(): void {
    if (this.follow) {
      this.unsubscribe = this.jobs.logs.subscribe(this.attemptId, () => this.schedule());
      this.jobs.on('attemptEnded', this.onEnded);
    }
    this.pump();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.jobs.off('attemptEnded', this.onEnded);
    if (!this.isLive()) this.jobs.logs.close(this.attemptId);
  }

  /** The attempt's ranks still run (or are being ended): its files may grow. */
  private isLive(): boolean {
    return this.jobs.lifecycle.attempt(this.attemptId) !== undefined;
  }

  private readonly tokenFn = (): string => this.token();

  /** The resumable position of every selected stream, e.g. "0o120.0e0.1o55.1e0". */
  token(): string {
    return encodeCursors(this.cursors);
  }

  private schedule(): void {
    if (this.scheduled || this.waitingForDrain || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.stopped) return;
    // Checked before reading: if the attempt has ended now, everything it wrote is in the files.
    const ended = !this.isLive();
    if (this.timeline && !this.pumpTimeline(this.timeline, ended)) return;
    // in time order, what no event covers (bytes a crashed controller wrote but did not
    // record) goes last; a live job's next event of that stream takes them sooner
    let progressed = this.order === 'stream' || ended || !this.follow;
    while (progressed) {
      progressed = false;
      // one chunk per stream per pass: round robin keeps ranks fair to each other
      for (const c of this.cursors) {
        const raw = this.jobs.logs.read(this.attemptId, c.rank, c.stream, c.offset, CHUNK_BYTES);
        if (raw.length === 0) continue;
        const atEnd = ended && c.offset + raw.length >= this.jobs.logs.size(this.attemptId, c.rank, c.stream);
        const data = atEnd ? raw : raw.subarray(0, utf8SafeLength(raw));
        if (data.length === 0) continue;
        const chunk = { rank: c.rank, stream: c.stream, offset: c.offset, data };
        c.offset += data.length;
        progressed = true;
        if (!this.write(chunk)) return;
      }
    }
    if (!this.follow || ended) {
      this.stop();
      this.done(ended);
    }
  }

  /**
   * Delivers the stored chunks in the order the controller stored them, up to the last one
   * stored; false when the sink asked to wait. A chunk covers the bytes of its stream from the
   * cursor to its end, so bytes an earlier chunk held back (an unfinished UTF-8 character)
   * or that no event recorded go out with it.
   */
  private pumpTimeline(timeline: LogTimeline, ended: boolean): boolean {
    for (;;) {
      const event = timeline.next();
      if (!event) return true;
      const c = this.cursorOf.get(cursorKey(event.rank, event.stream));
      if (!c) continue; // a rank or stream not asked for
      const end = event.offset + event.bytes;
      if (c.offset >= end) continue; // delivered already: a resumed reader, or --offset
      const raw = this.jobs.logs.read(this.attemptId, c.rank, c.stream, c.offset, end - c.offset);
      const atEnd = ended && c.offset + raw.length >= this.jobs.logs.size(this.attemptId, c.rank, c.stream);
      const data = atEnd ? raw : raw.subarray(0, utf8SafeLength(raw));
      if (data.length === 0) continue;
      const chunk = { rank: c.rank, stream: c.stream, offset: c.offset, data, at: event.at };
      c.offset += data.length;
      if (!this.write(chunk)) return false;
    }
  }

  /** Hands a chunk to the sink; false when it is full (the pump resumes on its drain). */
  private write(chunk: LogChunk): boolean {
    if (this.sink.write(chunk, this.tokenFn)) return true;
    this.waitingForDrain = true;
    this.sink.onDrain(() => {
      this.waitingForDrain = false;
      this.pump();
    });
    return false;
  }
}

/** Length of the longest prefix that does not end inside a UTF-8 sequence. */
export function utf8SafeLength(buf: Buffer): number {
  let i = buf.length - 1;
  let continuation = 0;
  while (i >= 0 && continuation < 3 && (buf[i]! & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return buf.length;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return buf.length - i >= need ? buf.length : i;
}
