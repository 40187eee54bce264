// The DDP demo's tagged lines (see ../ddp_demo.py), parsed back for the assertions.
import { fileURLToPath } from 'node:url';

export const DDP_DEMO = fileURLToPath(new URL('../ddp_demo.py', import.meta.url));
/** Debian's torch is visible to this interpreter only (shared/docs/recipes.md). */
export const PYTHON = '/usr/bin/python3';

export interface DemoRun {
  env: Record<string, string | null> | null;
  init: string | null;
  iterations: Array<{ i: number; loss: number; grad: number }>;
  params: { values: number[]; digest: string } | null;
  done: number | null;
  /** Lines that match no tag: a torn, merged or foreign line. */
  other: string[];
}

export function parseDemo(lines: readonly string[]): DemoRun {
  const run: DemoRun = { env: null, init: null, iterations: [], params: null, done: null, other: [] };
  for (const line of lines) {
    let m: RegExpExecArray | null;
    if ((m = /^env (\{.*\})$/.exec(line))) run.env = JSON.parse(m[1]!) as Record<string, string | null>;
    else if ((m = /^init ([0-9a-f]{64})$/.exec(line))) run.init = m[1]!;
    else if ((m = /^iter (\d+) loss (\S+) grad (\S+)$/.exec(line)))
      run.iterations.push({ i: Number(m[1]), loss: Number(m[2]), grad: Number(m[3]) });
    else if ((m = /^params (\[.*\]) ([0-9a-f]{64})$/.exec(line)))
      run.params = { values: JSON.parse(m[1]!) as number[], digest: m[2]! };
    else if ((m = /^done (\d+)$/.exec(line))) run.done = Number(m[1]);
    else run.other.push(line);
  }
  return run;
}
