// Durable rank output: one file per job, rank and stream under <data>/logs, the
// byte offset of every chunk being its position in the file.
//
// Agents deliver at least once (they resend from the last stored offset after any
// reconnect); the store keeps each byte exactly once by writing only what extends
// the file. The file size is the truth: it survives a controller crash with every
// byte written before it, and the database's byte counts are only an index.
//
// Descriptors are a bounded cache, not one per file: a job of 2,000 nodes × 8 ranks has
// 32,000 stream files, more than a process may usually open. Sizes are kept for every
// file; descriptors only for the most recently used, and a file is created at its first
// byte (a stream that never wrote has size 0 and no file).
import { closeSync, fstatSync, mkdirSync, openSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamName } from '@rankd/protocol';
import { countNewlines } from './count-newlines.js';

export const STREAMS: readonly StreamName[] = ['stdout', 'stderr'];

/** Descriptors kept open by default: far under any RLIMIT_NOFILE, plenty for the streams being written. */
export const MAX_OPEN_LOG_FILES = 1024;

export type AppendResult =
  | { kind: 'stored'; bytes: number }
  | { kind: 'duplicate' }
  /** The chunk starts past the end of the file: something was lost in between. */
  | { kind: 'gap'; expected: number };

export type LogListener = (rank: number, stream: StreamName, size: number) => void;

/** What a stream has stored since the store was made: its bytes and its newline characters. */
export interface IngestedTotals {
  bytes: number;
  lines: number;
}

export class LogStore {
  /** Stored size of every stream file this store has looked at, by `${jobId}/${rank}.${stream}`. */
  private readonly sizes = new Map<string, number>();
  /**
   * Jobs started by this store's process: none of their files can exist before their first
   * byte arrives here, so a size not yet known is 0 without asking the file system (a job
   * of 16,000 ranks would otherwise stat 32,000 missing files at its start).
   */
  private readonly fresh = new Set<string>();
  /** Open descriptors, least recently used first (a Map keeps insertion order). */
  private readonly fds = new Map<string, number>();
  private readonly listeners = new Map<string, Set<LogListener>>();
  private readonly stored: Record<StreamName, IngestedTotals> = {
    stdout: { bytes: 0, lines: 0 },
    stderr: { bytes: 0, lines: 0 },
  };

  constructor(
    private readonly dir: string,
    private readonly maxOpen = MAX_OPEN_LOG_FILES,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  path(jobId: string, rank: number, stream: StreamName): string {
    return join(this.dir, jobId, `${rank}.${stream}`);
  }

  /** A job that starts now, with nothing stored yet: no file is looked for until it writes. */
  begin(jobId: string): void {
    this.fresh.add(jobId);
  }

  /** A rank's stored sizes, read from its files (a job that was live before a restart). */
  open(jobId: string, rank: number): Record<StreamName, number> {
    return { stdout: this.size(jobId, rank, 'stdout'), stderr: this.size(jobId, rank, 'stderr') };
  }

  size(jobId: string, rank: number, stream: StreamName): number {
    const key = keyOf(jobId, rank, stream);
    let size = this.sizes.get(key);
    if (size === undefined) {
      if (this.fresh.has(jobId)) return 0;
      // a stream that never wrote has no file: size 0, told without an exception (a new job
      // of 16,000 ranks asks this 32,000 times at its start); any other error still throws
      size = statSync(this.path(jobId, rank, stream), { throwIfNoEntry: false })?.size ?? 0;
      this.sizes.set(key, size);
    }
    return size;
  }

  append(jobId: string, rank: number, stream: StreamName, offset: number, data: Buffer): AppendResult {
    const size = this.size(jobId, rank, stream);
    if (offset > size) return { kind: 'gap', expected: size };
    const end = offset + data.length;
    if (end <= size) return { kind: 'duplicate' };
    const fresh = data.subarray(size - offset);
    const fd = this.descriptor(jobId, rank, stream);
    let written = 0;
    while (written < fresh.length) written += writeSync(fd, fresh, written, fresh.length - written, size + written);
    this.sizes.set(keyOf(jobId, rank, stream), end);
    this.stored[stream].bytes += fresh.length;
    this.stored[stream].lines += countNewlines(fresh);
    const subscribers = this.listeners.get(jobId);
    if (subscribers) for (const listener of subscribers) listener(rank, stream, end);
    return { kind: 'stored', bytes: fresh.length };
  }

  /** Bytes and newlines stored since the store was made (a resent chunk counts once): /metrics reads them at scrape time. */
  ingested(stream: StreamName): Readonly<IngestedTotals> {
    return this.stored[stream];
  }

  /** Reads up to maxBytes from offset; an empty buffer at the end of what is stored. */
  read(jobId: string, rank: number, stream: StreamName, offset: number, maxBytes: number): Buffer {
    const length = Math.max(0, Math.min(maxBytes, this.size(jobId, rank, stream) - offset));
    if (length === 0) return Buffer.alloc(0);
    const buf = Buffer.allocUnsafe(length);
    const n = readSync(this.descriptor(jobId, rank, stream), buf, 0, length, offset);
    return buf.subarray(0, n);
  }

  /** Calls listener on every append to the job's files; returns the unsubscribe function. */
  subscribe(jobId: string, listener: LogListener): () => void {
    let set = this.listeners.get(jobId);
    if (!set) this.listeners.set(jobId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(jobId);
    };
  }

  /** Closes a job's descriptors and forgets its sizes (the files stay). Readers reopen on demand. */
  close(jobId: string): void {
    const prefix = jobId + '/';
    this.fresh.delete(jobId);
    for (const [key, fd] of this.fds) {
      if (!key.startsWith(prefix)) continue;
      closeSync(fd);
      this.fds.delete(key);
    }
    for (const key of this.sizes.keys()) if (key.startsWith(prefix)) this.sizes.delete(key);
  }

  /** Descriptors open now: bounded by maxOpen whatever the number of files. */
  get openDescriptors(): number {
    return this.fds.size;
  }

  /** Deletes a job's files (used when a job is purged). */
  remove(jobId: string): void {
    this.close(jobId);
    rmSync(join(this.dir, jobId), { recursive: true, force: true });
  }

  closeAll(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
    this.sizes.clear();
    this.fresh.clear();
  }

  /** The file's descriptor, opened (and the file created) on demand; the least recently used one goes when too many are open. */
  private descriptor(jobId: string, rank: number, stream: StreamName): number {
    const key = keyOf(jobId, rank, stream);
    let fd = this.fds.get(key);
    if (fd !== undefined) {
      this.fds.delete(key);
      this.fds.set(key, fd);
      return fd;
    }
    if (this.fds.size >= this.maxOpen) {
      const [oldest, oldFd] = this.fds.entries().next().value as [string, number];
      closeSync(oldFd);
      this.fds.delete(oldest);
    }
    mkdirSync(join(this.dir, jobId), { recursive: true, mode: 0o700 });
    fd = openSync(this.path(jobId, rank, stream), 'a+', 0o600);
    // the file is the truth: a size learned before another writer (none in practice) would be stale
    this.sizes.set(key, fstatSync(fd).size);
    this.fds.set(key, fd);
    return fd;
  }
}

function keyOf(jobId: string, rank: number, stream: StreamName): string {
  return `${jobId}/${rank}.${stream}`;
}
