// Durable rank output: one file per job, rank and stream under <data>/logs, the
// byte offset of every chunk being its position in the file.
//
// Agents deliver at least once (they resend from the last stored offset after any
// reconnect); the store keeps each byte exactly once by writing only what extends
// the file. The file size is the truth: it survives a controller crash with every
// byte written before it, and the database's byte counts are only an index.
import { closeSync, fstatSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamName } from '@rankd/protocol';

export const STREAMS: readonly StreamName[] = ['stdout', 'stderr'];

interface StreamFile {
  fd: number;
  size: number;
}

export type AppendResult =
  | { kind: 'stored'; bytes: number }
  | { kind: 'duplicate' }
  /** The chunk starts past the end of the file: something was lost in between. */
  | { kind: 'gap'; expected: number };

export type LogListener = (rank: number, stream: StreamName, size: number) => void;

export class LogStore {
  private readonly files = new Map<string, StreamFile>();
  private readonly listeners = new Map<string, Set<LogListener>>();

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  path(jobId: string, rank: number, stream: StreamName): string {
    return join(this.dir, jobId, `${rank}.${stream}`);
  }

  /** Opens (creating if needed) a rank's stream files and returns their stored sizes. */
  open(jobId: string, rank: number): Record<StreamName, number> {
    mkdirSync(join(this.dir, jobId), { recursive: true, mode: 0o700 });
    return { stdout: this.file(jobId, rank, 'stdout').size, stderr: this.file(jobId, rank, 'stderr').size };
  }

  size(jobId: string, rank: number, stream: StreamName): number {
    return this.file(jobId, rank, stream).size;
  }

  append(jobId: string, rank: number, stream: StreamName, offset: number, data: Buffer): AppendResult {
    const file = this.file(jobId, rank, stream);
    if (offset > file.size) return { kind: 'gap', expected: file.size };
    const end = offset + data.length;
    if (end <= file.size) return { kind: 'duplicate' };
    const fresh = data.subarray(file.size - offset);
    let written = 0;
    while (written < fresh.length) written += writeSync(file.fd, fresh, written, fresh.length - written, file.size + written);
    file.size = end;
    const subscribers = this.listeners.get(jobId);
    if (subscribers) for (const listener of subscribers) listener(rank, stream, end);
    return { kind: 'stored', bytes: fresh.length };
  }

  /** Reads up to maxBytes from offset; an empty buffer at the end of what is stored. */
  read(jobId: string, rank: number, stream: StreamName, offset: number, maxBytes: number): Buffer {
    const file = this.file(jobId, rank, stream);
    const length = Math.max(0, Math.min(maxBytes, file.size - offset));
    if (length === 0) return Buffer.alloc(0);
    const buf = Buffer.allocUnsafe(length);
    const n = readSync(file.fd, buf, 0, length, offset);
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

  /** Closes a job's descriptors (the files stay). Readers reopen on demand. */
  close(jobId: string): void {
    for (const [key, file] of this.files) {
      if (key.startsWith(jobId + '/')) {
        closeSync(file.fd);
        this.files.delete(key);
      }
    }
  }

  /** Deletes a job's files (used when a job is purged). */
  remove(jobId: string): void {
    this.close(jobId);
    rmSync(join(this.dir, jobId), { recursive: true, force: true });
  }

  closeAll(): void {
    for (const file of this.files.values()) closeSync(file.fd);
    this.files.clear();
  }

  private file(jobId: string, rank: number, stream: StreamName): StreamFile {
    const key = `${jobId}/${rank}.${stream}`;
    let file = this.files.get(key);
    if (!file) {
      mkdirSync(join(this.dir, jobId), { recursive: true, mode: 0o700 });
      const fd = openSync(this.path(jobId, rank, stream), 'a+', 0o600);
      file = { fd, size: fstatSync(fd).size };
      this.files.set(key, file);
    }
    return file;
  }
}
