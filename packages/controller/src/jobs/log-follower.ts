// One reader of a job's output: stored bytes first, then live ones as they arrive.
//
// The log files are the buffer. A follower holds only a cursor per rank and stream
// and reads the next chunk when its sink has room, so a slow reader costs nothing
// but its own lag: it never slows the ranks, the agents or the other readers.
import { encodeCursors, type LogCursor } from '@rankd/protocol/log-cursor';
import type { StreamName } from '@rankd/protocol';
import type { JobManager } from './job-manager.js';

// large enough that per-record costs (headers, syscalls) vanish next to the bytes
const CHUNK_BYTES = 256 * 1024;

export interface LogChunk {
  rank: number;
  stream: StreamName;
  offset: number;
  data: Buffer;
}

export interface LogEnd {
  state: string;
  reason: string;
  exitCode: number | null;
}

export interface LogSink {
  /**
   * Returns false when the sink is full; the follower then waits for `drain`. `cursor`
   * gives the resume token after this chunk; it costs O(streams), so only sinks that
   * send it per record (SSE ids) call it.
   */
  write(chunk: LogChunk, cursor: () => string): boolean;
  onDrain(resume: () => void): void;
  end(summary: LogEnd | null): void;
}

export type Cursor = LogCursor;

export class LogFollower {
  private unsubscribe: (() => void) | null = null;
  private scheduled = false;
  private waitingForDrain = false;
  private stopped = false;
  private readonly onEnded = (id: string) => id === this.jobId && this.schedule();

  constructor(
    private readonly jobs: JobManager,
    private readonly jobId: string,
    private readonly cursors: Cursor[],
    private readonly sink: LogSink,
    private readonly follow: boolean,
  ) {}

  start(): void {
    if (this.follow) {
      this.unsubscribe = this.jobs.logs.subscribe(this.jobId, () => this.schedule());
      this.jobs.on('ended', this.onEnded);
    }
    this.pump();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.jobs.off('ended', this.onEnded);
    if (!this.jobs.live.has(this.jobId)) this.jobs.logs.close(this.jobId);
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
    // Checked before reading: if the job has ended now, everything it wrote is in the files.
    const ended = this.jobs.isEnded(this.jobId);
    let progressed = true;
    while (progressed) {
      progressed = false;
      // one chunk per stream per pass: round robin keeps ranks fair to each other
      for (const c of this.cursors) {
        const raw = this.jobs.logs.read(this.jobId, c.rank, c.stream, c.offset, CHUNK_BYTES);
        if (raw.length === 0) continue;
        const atEnd = ended && c.offset + raw.length >= this.jobs.logs.size(this.jobId, c.rank, c.stream);
        const data = atEnd ? raw : raw.subarray(0, utf8SafeLength(raw));
        if (data.length === 0) continue;
        const chunk = { rank: c.rank, stream: c.stream, offset: c.offset, data };
        c.offset += data.length;
        progressed = true;
        if (!this.sink.write(chunk, this.tokenFn)) {
          this.waitingForDrain = true;
          this.sink.onDrain(() => {
            this.waitingForDrain = false;
            this.pump();
          });
          return;
        }
      }
    }
    if (!this.follow || ended) {
      const view = ended ? this.jobs.view(this.jobId) : null;
      this.stop();
      this.sink.end(view ? { state: view.state, reason: view.reason, exitCode: view.exitCode } : null);
    }
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
