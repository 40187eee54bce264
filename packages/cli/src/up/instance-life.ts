// How long an instance that `rankd up --slurm` or `--pods` started lives: the command given
// after `--`, then it ends (as `flux start CMD` does); with --detach, until `rankd down` or
// the end of the allocation or pod; otherwise until Ctrl-C, SIGTERM, or one of its daemons ends.
import { ExitCode } from '../exit-codes.js';
import { untilSignal } from '../signals.js';
import { runInside } from './instance.js';

export interface InstanceFlags {
  detach: boolean;
  keep: boolean;
  timeoutMs: number;
  allowPartial: boolean;
  workDir?: string;
  /** What to run against the instance (`rankd up --slurm -- CMD…`); empty for none. */
  command: string[];
}

export interface StartedInstance {
  /** Another `up` started it: this one neither waits for it nor ends it. */
  attached: boolean;
  stop?: () => Promise<void>;
  /** Why a daemon of the instance ended, or null while all run. */
  gone?: () => string | null;
  /** Settles when a daemon of the instance ends. */
  exited?: Promise<unknown>;
}

export async function holdInstance(home: string, flags: InstanceFlags, instance: StartedInstance): Promise<number> {
  if (flags.command.length > 0) {
    const code = await runInside(home, flags.command);
    if (!instance.attached) await instance.stop?.();
    return code;
  }
  if (flags.detach || instance.attached) return ExitCode.Ok;
  const outcome = await Promise.race([
    untilSignal().then(() => null),
    (instance.exited ?? new Promise<never>(() => {})).then(() => instance.gone?.() ?? 'a daemon ended'),
  ]);
  if (outcome) process.stderr.write(`rankd: ${outcome}\n`);
  process.stderr.write('rankd: stopping the instance\n');
  await instance.stop?.();
  return outcome ? ExitCode.Software : ExitCode.Ok;
}
