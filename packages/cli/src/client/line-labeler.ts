// Prefixes every line of a rank's output with a label, as `srun -l` does ("0: ").
// Partial lines wait for their end, so lines of different ranks never interleave
// mid-line; whatever is left is flushed when the job ends.
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

export class LineLabeler {
  private partial = '';

  constructor(
    private readonly label: string,
    private readonly out: (text: string) => boolean,
  ) {}

  /** Returns false when the destination asked to wait (backpressure). */
  push(text: string): boolean {
    const combined = this.partial + text;
    const lastNl = combined.lastIndexOf('\n');
    if (lastNl < 0) {
      this.partial = combined;
      return true;
    }
    this.partial = combined.slice(lastNl + 1);
    const complete = combined.slice(0, lastNl);
    if (this.label === '') return this.out(complete + '\n');
    return this.out(this.label + complete.split('\n').join('\n' + this.label) + '\n');
  }

  flush(): void {
    if (this.partial === '') return;
    this.out(this.label + this.partial + '\n');
    this.partial = '';
  }
}
