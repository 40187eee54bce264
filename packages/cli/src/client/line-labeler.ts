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

  constructor(
    label: string,
    private readonly out: (bytes: Buffer) => boolean,
  ) {
    this.label = Buffer.from(label, 'utf8');
  }

  /** Returns false when the destination asked to wait (backpressure). */
  push(data: Buffer): boolean {
    const lastNl = data.lastIndexOf(NL);
    if (lastNl < 0) {
      if (data.length > 0) this.partial.push(data);
      return true;
    }
    const complete = this.partial.length > 0 ? Buffer.concat([...this.partial, data.subarray(0, lastNl + 1)]) : data.subarray(0, lastNl + 1);
    this.partial = lastNl + 1 < data.length ? [data.subarray(lastNl + 1)] : [];
    return this.out(this.labelled(complete));
  }

  flush(): void {
    if (this.partial.length === 0) return;
    const rest = Buffer.concat([...this.partial, Buffer.of(NL)]);
    this.partial = [];
    this.out(this.labelled(rest));
  }

  /** `lines` ends with a newline; one allocation for the whole labelled block. */
  private labelled(lines: Buffer): Buffer {
    if (this.label.length === 0) return lines;
    let count = 0;
    for (let i = lines.indexOf(NL); i >= 0; i = lines.indexOf(NL, i + 1)) count++;
    const out = Buffer.allocUnsafe(lines.length + count * this.label.length);
    let src = 0;
    let dst = 0;
    while (src < lines.length) {
      const end = lines.indexOf(NL, src) + 1;
      dst += this.label.copy(out, dst);
      dst += lines.copy(out, dst, src, end);
      src = end;
    }
    return out;
  }
}
