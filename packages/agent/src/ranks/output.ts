// Reading a rank's output from the spool by byte offset. The files are the buffer: the
// rank writes to them directly (no pipe that only the agent drains, so a slow or dead
// agent never blocks a rank), and the sender pulls a chunk only when its socket has room.
// After a reconnect, or an agent restart, it resumes from whatever offset the controller
// acknowledged. Offsets are byte offsets in the file, so a chunk can be stored exactly
// once whatever the number of times it is sent.
import fs from 'node:fs';
import path from 'node:path';
import { watchRankDir } from './dir-watch.js';
import { RankErrorCode, rankError } from './errors.js';
import { RANK_STREAMS, type RankStream } from './rank-spec.js';
import type { Spool } from './spool.js';

export interface OutputChunk {
  stream: RankStream;
  /** Offset of data[0] in the stream. */
  offset: number;
  data: Buffer;
  /** Offset to ask for next: offset + data.length. */
  nextOffset: number;
  /** Size of the stream when it was read; more than nextOffset when a partial line was held back. */
  size: number;
  /** The rank has ended and nextOffset is the end of the stream: nothing more will ever come. */
  final: boolean;
}

export interface FollowOptions extends ReadOptions {
  maxBytes?: number;
  signal?: AbortSignal;
}

export interface ReadOptions {
  /**
   * Return whole lines only while the rank runs: the chunk ends after its last newline.
   * A line longer than maxBytes still comes out in maxBytes pieces, and once the rank has
   * ended the last partial line comes out as it is, so nothing is ever held back for good.
   */
  wholeLines?: boolean;
}

export const DEFAULT_CHUNK_BYTES = 256 * 1024;

/** Open descriptors kept for streams being pumped; the oldest is closed past this many. */
const MAX_OPEN_STREAMS = 256;

export class RankOutput {
  /**
   * Descriptors by stream path. A pump reads a stream hundreds of times a second; an
   * open, fstat and close per chunk cost more than the reads themselves. Reads are
   * synchronous positional reads of the page cache: microseconds, and no thread pool hop.
   */
  private readonly fds = new Map<string, number>();

  constructor(private readonly spool: Spool) {}

  /** Whether the rank has ended: exit.json is written only after its output is complete. */
  ended(jobId: string, rank: number): boolean {
    return fs.existsSync(path.join(this.spool.rankDir(jobId, rank), 'exit.json'));
  }

  /** Current size of a stream (0 before the rank created it). */
  size(jobId: string, rank: number, stream: RankStream): number {
    try {
      return fs.statSync(this.spool.streamPath(jobId, rank, checkStream(stream))).size;
    } catch {
      return 0;
    }
  }

  /** Reads up to maxBytes of a stream from `fromOffset`. */
  async read(
    jobId: string,
    rank: number,
    stream: RankStream,
    fromOffset: number,
    maxBytes = DEFAULT_CHUNK_BYTES,
    opts: ReadOptions = {},
  ): Promise<OutputChunk> {
    checkStream(stream);
    if (!Number.isSafeInteger(fromOffset) || fromOffset < 0)
      throw rankError(RankErrorCode.BadOffset, `offset ${fromOffset} is invalid`);
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1)
      throw rankError(RankErrorCode.BadOffset, `maxBytes ${maxBytes} is invalid`);
    // ended is looked at before the size: if the rank had ended by then, the size read
    // afterwards is the final one
    const ended = this.ended(jobId, rank);
    const fd = this.open(this.spool.streamPath(jobId, rank, stream));
    if (fd === null) {
      if (fromOffset > 0)
        throw rankError(RankErrorCode.BadOffset, `offset ${fromOffset} is past the end of ${stream} (0)`);
      return { stream, offset: 0, data: Buffer.alloc(0), nextOffset: 0, size: 0, final: ended };
    }
    const size = fs.fstatSync(fd).size;
    if (fromOffset > size)
      throw rankError(RankErrorCode.BadOffset, `offset ${fromOffset} is past the end of ${stream} (${size})`);
    const want = Math.min(maxBytes, size - fromOffset);
    const buf = Buffer.allocUnsafe(want);
    let got = 0;
    while (got < want) {
      const n = fs.readSync(fd, buf, got, want - got, fromOffset + got);
      if (n === 0) break;
      got += n;
    }
    let data = buf.subarray(0, got);
    const atEnd = fromOffset + got === size;
    if (opts.wholeLines && !(ended && atEnd) && data.length > 0 && data[data.length - 1] !== 0x0a) {
      const nl = data.lastIndexOf(0x0a);
      if (nl >= 0) data = data.subarray(0, nl + 1);
      else if (data.length < maxBytes) data = data.subarray(0, 0);
    }
    const nextOffset = fromOffset + data.length;
    return { stream, offset: fromOffset, data, nextOffset, size, final: ended && nextOffset === size };
  }

  /** Closes the descriptors of a job's streams (before its spool is removed). */
  close(jobId: string): void {
    const prefix = this.spool.jobDir(jobId) + path.sep;
    for (const [file, fd] of this.fds) {
      if (!file.startsWith(prefix)) continue;
      fs.closeSync(fd);
      this.fds.delete(file);
    }
  }

  /** Closes every descriptor (agent shutdown). */
  closeAll(): void {
    for (const fd of this.fds.values()) fs.closeSync(fd);
    this.fds.clear();
  }

  private open(file: string): number | null {
    const known = this.fds.get(file);
    if (known !== undefined) return known;
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    if (this.fds.size >= MAX_OPEN_STREAMS) {
      // Maps iterate in insertion order: the first key is the longest open
      const [oldest, oldFd] = this.fds.entries().next().value as [string, number];
      fs.closeSync(oldFd);
      this.fds.delete(oldest);
    }
    this.fds.set(file, fd);
    return fd;
  }

  /**
   * Chunks from `fromOffset` to the end of the stream, waiting for new output while the
   * rank runs; the last chunk has final: true. A chunk is read only when the consumer asks
   * for the next one, which is the backpressure: await the socket's drain between them.
   * Ends early, without a final chunk, when `signal` aborts.
   */
  async *follow(
    jobId: string,
    rank: number,
    stream: RankStream,
    fromOffset: number,
    opts: FollowOptions = {},
  ): AsyncGenerator<OutputChunk> {
    let offset = fromOffset;
    for (;;) {
      if (opts.signal?.aborted) return;
      const chunk = await this.read(jobId, rank, stream, offset, opts.maxBytes ?? DEFAULT_CHUNK_BYTES, opts);
      if (chunk.data.length > 0 || chunk.final) yield chunk;
      if (chunk.final) return;
      offset = chunk.nextOffset;
      // an empty read means nothing usable now (at most a partial line): wait for growth
      // past what was seen, never for "more than offset", which a partial line already is
      if (
        chunk.data.length === 0 &&
        (await this.waitForData(jobId, rank, stream, chunk.size, opts.signal)) === 'aborted'
      )
        return;
    }
  }

  /**
   * Resolves when the stream holds more than `offset` bytes, or the rank has ended, or
   * `signal` aborts. Cheap to call in a loop: read, send, wait, read again.
   */
  waitForData(
    jobId: string,
    rank: number,
    stream: RankStream,
    offset: number,
    signal?: AbortSignal,
  ): Promise<'data' | 'ended' | 'aborted'> {
    checkStream(stream);
    const dir = this.spool.rankDir(jobId, rank);
    return new Promise((resolve) => {
      let done = false;
      const check = (): void => {
        if (done) return;
        let result: 'data' | 'ended' | 'aborted' | null = null;
        if (signal?.aborted) result = 'aborted';
        else if (this.size(jobId, rank, stream) > offset) result = 'data';
        else if (this.ended(jobId, rank)) result = 'ended';
        if (result === null) return;
        done = true;
        unwatch();
        signal?.removeEventListener('abort', check);
        resolve(result);
      };
      // watch first, then look: data written in between is seen by one or the other
      const unwatch = watchRankDir(dir, check);
      signal?.addEventListener('abort', check);
      check();
    });
  }
}

function checkStream(stream: RankStream): RankStream {
  if (!RANK_STREAMS.includes(stream)) throw rankError(RankErrorCode.BadOffset, `no stream ${JSON.stringify(stream)}`);
  return stream;
}
