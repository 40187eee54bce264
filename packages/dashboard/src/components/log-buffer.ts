// The lines of a followed log: split from the stream's records, labelled with their rank
// and stream, capped so that a job that prints forever cannot take the tab's memory.
export interface LogLine {
  rank: number;
  err: boolean;
  text: string;
}

const CAP = 200_000;

export class LogBuffer {
  lines: LogLine[] = [];
  /** Lines dropped from the front once the cap was reached. */
  dropped = 0;
  private readonly partial = new Map<string, string>();

  /** Appends one record's text; a line without its newline yet waits for the rest. */
  append(rank: number, stream: string, data: string): number {
    const key = `${rank}/${stream}`;
    const parts = ((this.partial.get(key) ?? '') + data).split('\n');
    this.partial.set(key, parts.pop()!);
    const err = stream === 'stderr';
    for (const text of parts) this.lines.push({ rank, err, text });
    if (this.lines.length > CAP) {
      const drop = this.lines.length - CAP + CAP / 10;
      this.lines.splice(0, drop);
      this.dropped += drop;
    }
    return parts.length;
  }

  /** Lines still waiting for their newline, once the stream has ended. */
  flush(): void {
    for (const [key, text] of this.partial) {
      if (!text) continue;
      const [rank, stream] = key.split('/');
      this.lines.push({ rank: Number(rank), err: stream === 'stderr', text });
    }
    this.partial.clear();
  }
}

export function label(line: LogLine): string {
  return `${line.rank}${line.err ? '!' : ':'}`;
}
