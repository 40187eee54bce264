// `rankd run --restart-on`: which failures restart a job, checked before any request.
import { InvalidArgumentError } from 'commander';
import type { JobSubmit } from '@rankd/protocol';

type RestartOn = NonNullable<JobSubmit['restartOn']>;

/** any, node-lost, or a comma-separated list of exit statuses (0-255), as torchrun users name them. */
export function restartOnOf(value: string): RestartOn {
  const t = value.trim();
  if (t === 'any' || t === 'node-lost') return t;
  const codes = t.split(',').map((c) => c.trim());
  if (codes.length === 0 || codes.some((c) => !/^(0|[1-9][0-9]{0,2})$/.test(c) || Number(c) > 255))
    throw new InvalidArgumentError(`"${value}" is not any, node-lost, or exit codes 0-255 separated by commas (1,137)`);
  return [...new Set(codes.map(Number))];
}
