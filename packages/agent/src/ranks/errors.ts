import { RankErrorCode, RankdError } from '@rankd/protocol';

// The codes of a failed rank start are the registry's RankErrorCode (protocol errors.ts).
export { RankErrorCode };

export function rankError(code: RankErrorCode, message: string, details?: Record<string, unknown>): RankdError {
  return new RankdError(code, message, details);
}

/**
 * The status a shell gives a program that could not start for this reason, as bash and
 * POSIX have it: 127 when it is not there, 126 when it cannot be executed; null for the
 * failures no shell would meet (a bad user, pinning, a cgroup), which end the job with 1.
 */
export function shellStatusOf(code: string | undefined): number | null {
  if (code === RankErrorCode.ProgramNotFound) return 127;
  if (code === RankErrorCode.ProgramNotExecutable || code === RankErrorCode.Exec) return 126;
  return null;
}
