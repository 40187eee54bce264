import { RankdError } from '@rankd/protocol';

// Stable codes of the errors a rank start can end in. The agent forwards them to
// the controller as they are, so a code once published is never renamed.
export const RankErrorCode = {
  /** The launch request is malformed: job id, rank, argv, env, cpus, cwd. */
  BadLaunch: 'RANKD_RANK_BAD_LAUNCH',
  /** The job's user does not exist, or the agent cannot switch to it. */
  BadUser: 'RANKD_RANK_BAD_USER',
  /** The rank would run as root and the runner was not created with allowRoot. */
  RootNotAllowed: 'RANKD_RANK_ROOT_NOT_ALLOWED',
  /** The working directory does not exist or the user cannot enter it. */
  BadCwd: 'RANKD_RANK_BAD_CWD',
  /** argv[0] is not there: no such file, or no such program on the rank's PATH (a shell's 127). */
  ProgramNotFound: 'RANKD_RANK_PROGRAM_NOT_FOUND',
  /** argv[0] is there but cannot be executed: no execute permission, a directory (a shell's 126). */
  ProgramNotExecutable: 'RANKD_RANK_PROGRAM_NOT_EXECUTABLE',
  /** The rank already runs (or ran) on this node and was not forgotten. */
  Exists: 'RANKD_RANK_EXISTS',
  /** The job is being aborted (or was); no new rank of it may start. */
  JobAborted: 'RANKD_RANK_JOB_ABORTED',
  /** forget() of a job that still has live ranks. */
  JobRunning: 'RANKD_RANK_JOB_RUNNING',
  /** CPUs are planned but neither numactl nor taskset is installed. */
  NoPinningTool: 'RANKD_RANK_NO_PINNING_TOOL',
  /** The native launcher could not set the planned CPU affinity or memory policy (sched_setaffinity, set_mempolicy). */
  Pinning: 'RANKD_RANK_PINNING',
  /** The supervisor could not be started or died before the rank started. */
  SpawnFailed: 'RANKD_RANK_SPAWN_FAILED',
  /** The rank's process could not join its cgroup. */
  Cgroup: 'RANKD_RANK_CGROUP',
  /** The supervisor could not drop to the job's user (setgroups/setgid/setuid). */
  UserSwitch: 'RANKD_RANK_USER_SWITCH',
  /**
   * The first program of the exec chain could not be executed. Not sent: the supervisors name
   * the failure ProgramNotFound or ProgramNotExecutable by its errno; kept, as every published code.
   */
  Exec: 'RANKD_RANK_EXEC',
  /** A read past the end of a stream, or a stream name that does not exist. */
  BadOffset: 'RANKD_RANK_BAD_OFFSET',
  /** signal()/read() of a rank this runner does not know. */
  Unknown: 'RANKD_RANK_UNKNOWN',
} as const;
export type RankErrorCode = (typeof RankErrorCode)[keyof typeof RankErrorCode];

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
