// Per-user limits (the controller's --max-jobs-per-user and --max-cores-per-user), as
// Slurm's MaxJobsPerUser and MaxTRESPerUser=cpu: over one, a job waits with that reason.
import { plural } from '@rankd/protocol/plural';
export interface UserLimits {
  /** Running jobs one user may have at once. */
  maxJobs?: number;
  /** Cores one user's running jobs may use at once (--share jobs count the cores they run on). */
  maxCores?: number;
}

export interface Usage {
  jobs: number;
  cores: number;
}

export const NO_OWNER = '(no user)';

export function ownerKey(owner: string | null): string {
  return owner ?? NO_OWNER;
}

/** Why a job of `owner` needing `cores` must wait under the limits, or null. */
export function overLimit(
  owner: string | null,
  cores: number,
  usage: Usage | undefined,
  limits: UserLimits,
): string | null {
  const u = usage ?? { jobs: 0, cores: 0 };
  const who = `user ${ownerKey(owner)}`;
  if (limits.maxJobs !== undefined && u.jobs >= limits.maxJobs) {
    return `${who} runs ${plural(u.jobs, 'job')}, the most one user may (--max-jobs-per-user ${limits.maxJobs})`;
  }
  if (limits.maxCores !== undefined && u.cores + cores > limits.maxCores) {
    return `${who} runs on ${plural(u.cores, 'core')}; ${cores} more would pass the limit of ${limits.maxCores} (--max-cores-per-user)`;
  }
  return null;
}

/** Why a job can never run under the limits, however long it waits, or null. */
export function neverWithin(cores: number, limits: UserLimits): string | null {
  if (limits.maxJobs === 0) return 'the controller lets no user run a job (--max-jobs-per-user 0)';
  if (limits.maxCores !== undefined && cores > limits.maxCores)
    return `the job needs ${plural(cores, 'core')}, more than the ${limits.maxCores} one user may use (--max-cores-per-user)`;
  return null;
}
