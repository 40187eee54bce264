// `rankd run --input`: which ranks read the command's stdin (srun --input), checked before
// any request, and whether there is anything to forward at all.
import type { JobSubmit } from '@rankd/protocol';
import { stdinIsEmpty } from './client/stdin-forward.js';
import { CliError, ExitCode } from './exit-codes.js';

export interface InputFlags {
  input?: string;
  ntasks?: string;
  pty?: boolean;
  mpi?: string;
  /** A job that may restart reads no stdin: its bytes could not be replayed into a later attempt. */
  maxRestarts?: number;
}

/** Who reads this stdin: nobody when it is /dev/null or closed (they read EOF at once), nor for --pty and Open MPI jobs. */
export function stdinOf(flags: InputFlags): Pick<JobSubmit, 'stdin'> {
  const who = flags.input ?? '0';
  if (who !== 'all' && who !== 'none' && !/^(0|[1-9][0-9]{0,7})$/.test(who))
    throw new CliError(`--input is a rank, all or none, not "${who}"`, ExitCode.Usage);
  // -n is the world size: a rank past it is a usage error before any request (else the controller says so, 400)
  const ranks = flags.ntasks === undefined ? NaN : Number(flags.ntasks);
  if (/^[0-9]+$/.test(who) && Number(who) >= ranks)
    throw new CliError(
      `--input ${who}: the job has ${ranks === 1 ? 'one rank, 0' : `${ranks} ranks, 0 to ${ranks - 1}`}`,
      ExitCode.Usage,
    );
  const unsupported = flags.pty
    ? '--pty'
    : flags.mpi === 'openmpi'
      ? '--mpi openmpi'
      : (flags.maxRestarts ?? 0) > 0
        ? '--max-restarts'
        : null;
  if (unsupported && flags.input !== undefined && who !== 'none')
    throw new CliError(`--input ${who}: stdin is not forwarded with ${unsupported}`, ExitCode.Usage);
  if (who === 'none' || stdinIsEmpty()) return {};
  if (unsupported) {
    // a pipe or file given to such a job is not read: say so rather than drop it unseen
    if (!process.stdin.isTTY)
      process.stderr.write(`rankd: stdin is not forwarded with ${unsupported}; the ranks do not read it\n`);
    return {};
  }
  return { stdin: who === 'all' ? 'all' : Number(who) };
}
