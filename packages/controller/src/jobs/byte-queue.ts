// Bytes received once and read by several readers at their own pace (a job's stdin, copied
// to every rank that reads it): addressed by absolute offset, and dropped once every reader
// is past them.
export class ByteQueue {
  private chunks: Buffer[] = [];
  /** Offset of the first byte still held. */
  private start = 0;
  /** Offset just past the last byte received: how many were ever pushed. */
  end = 0;

  push(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.chunks.push(bytes);
    this.end += bytes.length;
  }

  /** How many bytes are held. */
  get held(): number {
    return this.end - this.start;
  }

  /** Up to `max` bytes from `from` (which must be held). */
  read(from: number, max: number): Buffer {
    if (from < this.start || from > this.end)
      throw new RangeError(`offset ${from} is not held (${this.start}..${this.end})`);
    const parts: Buffer[] = [];
    let at = this.start;
    let want = Math.min(max, this.end - from);
    for (const chunk of this.chunks) {
      if (want === 0) break;
      const next = at + chunk.length;
      if (next > from) {
        const part = chunk.subarray(Math.max(0, from - at), Math.min(chunk.length, from - at + want));
        parts.push(part);
        want -= part.length;
        from += part.length;
      }
      at = next;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /** Forgets every byte before `offset`. */
  dropBefore(offset: number): void {
    while (this.chunks.length > 0 && this.start + this.chunks[0]!.length <= offset) {
      this.start += this.chunks.shift()!.length;
    }
    if (this.chunks.length > 0 && offset > this.start) {
      this.chunks[0] = this.chunks[0]!.subarray(offset - this.start);
      this.start = offset;
    }
  }
}
