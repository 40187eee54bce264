// The submitter's environment that `rankd run` exports to the ranks (srun --export), and
// the bound on a job's environment as a whole. The CLI applies both before it sends a
// job; the controller checks them again on POST /v1/jobs, for every other client.
// Kept free of TypeBox: the CLI loads it at startup.
import { ErrorCode, RankdError } from './errors.js';

/**
 * A job's whole environment (exported variables, --env, and the submit's env) as execve(2)
 * counts it: NAME=VALUE plus a NUL per variable. Linux gives argv and environment together
 * a quarter of the stack limit (2 MiB under the usual 8 MiB); a job's environment travels
 * to every node in one frame (MAX_FRAME_BYTES, 1 MiB) beside its rank map, and is stored
 * with the job. A shell with many modules loaded holds some tens of KiB.
 */
export const JOB_ENV_MAX_BYTES = 256 * 1024;

/** The bound as people write it: "256 KiB". */
export const JOB_ENV_MAX_TEXT = `${JOB_ENV_MAX_BYTES / 1024} KiB`;

/** The variables of the Unix user a rank runs as, which the agent sets from the node's passwd. */
export const IDENTITY_VARIABLES: readonly string[] = ['HOME', 'USER', 'LOGNAME', 'SHELL'];

/** PMI-1 wire-up a client may hold when it runs inside another launcher's job: a descriptor or port of that job, never the rank's. */
const PMI_WIRE_UP = new Set(['PMI_FD', 'PMI_PORT', 'PMI_ID', 'PMI_RANK', 'PMI_SIZE']);

/**
 * Why `name` is never taken from the submitter's environment, or null when it is exported.
 * Identity variables are not in this list: they are replaced on the node, not withheld.
 */
export function notExportedBecause(name: string): string | null {
  if (name.startsWith('RANKD_'))
    return "it is rankd's own client setting (RANKD_TOKEN is a credential; rankd sets RANKD_JOB_ID itself)";
  if (name.startsWith('SLURM_')) return 'a program would believe it runs in a Slurm step';
  if (PMI_WIRE_UP.has(name)) return "it names the submitter's own PMI channel; rankd serves each rank its own";
  return null;
}

/** Bytes of `env` as execve counts them (NAME=VALUE\0). */
export function envBytes(env: Readonly<Record<string, string>> | undefined): number {
  let n = 0;
  for (const [k, v] of Object.entries(env ?? {})) n += Buffer.byteLength(k) + Buffer.byteLength(v) + 2;
  return n;
}

/** The parts of a job's environment, by where they come from; the bound is over them together. */
export interface JobEnvParts {
  /** The submitter's variables (rankd run --export). */
  exported?: Readonly<Record<string, string>> | undefined;
  /** Variables given explicitly (rankd run --env, the submit's env). */
  explicit?: Readonly<Record<string, string>> | undefined;
}

/** Throws RANKD_ENV_TOO_LARGE when the job's environment is over JOB_ENV_MAX_BYTES; the message says how to shrink it. (One value is bounded by the schemas, 128 KiB as Linux's MAX_ARG_STRLEN.) */
export function checkJobEnvSize(parts: JobEnvParts): void {
  const exported = envBytes(parts.exported);
  const explicit = envBytes(parts.explicit);
  const total = exported + explicit;
  if (total <= JOB_ENV_MAX_BYTES) return;
  const largest = Object.entries({ ...parts.exported, ...parts.explicit })
    .map(([k, v]) => [k, Buffer.byteLength(v)] as const)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([k, n]) => `${k} ${kib(n)}`);
  throw new RankdError(
    ErrorCode.EnvTooLarge,
    `the ranks' environment is ${kib(total)} (exported ${kib(exported)}, --env ${kib(explicit)}), over rankd's limit of ${JOB_ENV_MAX_TEXT}; ` +
      `the largest: ${largest.join(', ')}. Export less (--export NONE, or --export VAR,… to name what the ranks need) or unset the large variables`,
    { bytes: total, limit: JOB_ENV_MAX_BYTES },
  );
}

/** Throws RANKD_ENV_NOT_EXPORTABLE for a name the submitter's environment never gives a rank (a client other than the CLI sent it). */
export function checkExportedNames(exported: Readonly<Record<string, string>> | undefined): void {
  for (const name of Object.keys(exported ?? {})) {
    const why = notExportedBecause(name);
    if (why) {
      throw new RankdError(ErrorCode.EnvNotExportable, `exported variable ${name} is never passed to ranks: ${why}`, {
        variable: name,
      });
    }
  }
}

function kib(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} KiB`;
}
