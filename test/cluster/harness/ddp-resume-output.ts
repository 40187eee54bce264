// The resume demo's tagged lines (packages/cli/demo/ddp_resume.py), parsed back into the
// attempts one rank lived through, for the assertions.
import { fileURLToPath } from 'node:url';

export const DDP_RESUME = fileURLToPath(new URL('../../../packages/cli/demo/ddp_resume.py', import.meta.url));

export interface ResumeAttempt {
  /** What the launcher gave this rank: RANK, WORLD_SIZE, RANKD_ATTEMPT, TORCHELASTIC_RESTART_COUNT, pid. */
  env: Record<string, string | number | null>;
  /** 'fresh', or the number of steps the checkpoint it resumed from had done; null if it never said. */
  start: 'fresh' | number | null;
  steps: Array<{ i: number; loss: string }>;
  checkpoints: number[];
  params: { values: number[]; digest: string } | null;
  done: number | null;
}

export interface ResumeRun {
  /** One per `attempt` line, in order. */
  attempts: ResumeAttempt[];
  /** Lines that match no tag, or come before the first `attempt` line: torn, merged or foreign. */
  other: string[];
}

export function parseResume(lines: readonly string[]): ResumeRun {
  const run: ResumeRun = { attempts: [], other: [] };
  for (const line of lines) {
    let m: RegExpExecArray | null;
    if ((m = /^attempt (\{.*\})$/.exec(line))) {
      const env = JSON.parse(m[1]!) as ResumeAttempt['env'];
      run.attempts.push({ env, start: null, steps: [], checkpoints: [], params: null, done: null });
      continue;
    }
    const a = run.attempts.at(-1);
    if (!a) run.other.push(line);
    else if (line === 'fresh') a.start = 'fresh';
    else if ((m = /^resume (\d+)$/.exec(line))) a.start = Number(m[1]);
    // the loss stays text: equal text is equal float32 value printed to 9 digits
    else if ((m = /^step (\d+) loss (\S+)$/.exec(line))) a.steps.push({ i: Number(m[1]), loss: m[2]! });
    else if ((m = /^checkpoint (\d+)$/.exec(line))) a.checkpoints.push(Number(m[1]));
    else if ((m = /^params (\[.*\]) ([0-9a-f]{64})$/.exec(line)))
      a.params = { values: JSON.parse(m[1]!) as number[], digest: m[2]! };
    else if ((m = /^done (\d+)$/.exec(line))) a.done = Number(m[1]);
    else run.other.push(line);
  }
  return run;
}

/**
 * torchrun's `--tee 1` prints each worker's stdout lines as "[default<LOCAL_RANK>]:text".
 * Splits such output into each local rank's lines, and keeps the others apart.
 */
export function splitTorchrun(text: string): { byRank: Map<number, string[]>; unlabelled: string[] } {
  const byRank = new Map<number, string[]>();
  const unlabelled: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const m = /^\[default(\d+)\]:(.*)$/.exec(line);
    if (!m) {
      unlabelled.push(line);
      continue;
    }
    const rank = Number(m[1]);
    byRank.set(rank, [...(byRank.get(rank) ?? []), m[2]!]);
  }
  return { byRank, unlabelled };
}
