// Prefixes every line of a rank's output with a label, as `srun -l` does ("0: ").
// Partial lines wait for their end, so lines of different ranks never interleave
// mid-line; whatever is left is flushed when the job ends.
//
// Works on bytes, never decoding text: a label goes after a newline byte, which is
// never inside a UTF-8 sequence, and output that is not UTF-8 passes through intact.
export interface LabelContext {
  rank: number;
  node: string;
  localRank: number;
  stream: string;
}

/** Renders "{rank}@{node}: " style templates; unknown fields are left as written. */
export function renderLabel(template: string, ctx: LabelContext): string {
  return template.replace(/\{(rank|node|localRank|stream)\}/g, (_, key: keyof LabelContext) => String(ctx[key]));
}

const NL = 0x0a;

export class LineLabeler {
  private readonly label: Buffer;
  /** Pieces of the line that has not ended yet. */
  private partial: Buffer[] = [];
  /** The time stamp of the line that has not ended yet: when its first byte came. */
  private partialStamp: Buffer | null = null;

  constructor(
    label: string,
    private readonly out: (bytes: Buffer) => boolean,
  ) {
    this.label = Buffer.from(label, 'utf8');
  }

  /**
   * Returns false when the destination asked to wait (backpressure). `time` (RFC 3339) goes
   * before the label of every line that starts in `data`, as `docker logs --timestamps` does.
   */
  push(data: Buffer, time?: string): boolean {
    const stamp = time === undefined ? null : Buffer.from(`${time} `);
    const lastNl = data.lastIndexOf(NL);
    if (lastNl < 0) {
      if (data.length > 0) {
        if (this.partial.length === 0) this.partialStamp = stamp;
        this.partial.push(data);
      }
      return true;
    }
    const first = this.partial.length > 0 ? this.partialStamp : stamp;
    const complete =
      this.partial.length > 0
        ? Buffer.concat([...this.partial, data.subarray(0, lastNl + 1)])
        : data.subarray(0, lastNl + 1);
    this.partial = lastNl + 1 < data.length ? [data.subarray(lastNl + 1)] : [];
    this.partialStamp = stamp;
    return this.out(this.labelled(complete, first, stamp));
  }

  flush(): void {
    if (this.partial.length === 0) return;
    const rest = Buffer.concat([...this.partial, Buffer.of(NL)]);
    this.partial = [];
    this.out(this.labelled(rest, this.partialStamp, null));
  }

  /** `lines` ends with a newline; one allocation for the whole labelled block. The first line gets `first`, the others `rest`. */
  private labelled(lines: Buffer, first: Buffer | null, rest: Buffer | null): Buffer {
    if (this.label.length === 0 && first === null && rest === null) return lines;
    let count = 0;
    for (let i = lines.indexOf(NL); i >= 0; i = lines.indexOf(NL, i + 1)) count++;
    const stamps = (first?.length ?? 0) + (count - 1) * (rest?.length ?? 0);
    const out = Buffer.allocUnsafe(lines.length + count * this.label.length + stamps);
    let src = 0;
    let dst = 0;
    while (src < lines.length) {
      const end = lines.indexOf(NL, src) + 1;
      const stamp = src === 0 ? first : rest;
      if (stamp) dst += stamp.copy(out, dst);
      dst += this.label.copy(out, dst);
      dst += lines.copy(out, dst, src, end);
      src = end;
    }
    return out;
  }
}
