import type { PlacementSpec } from '@rankd/protocol';

// rankd's own exit codes, from sysexits.h so that they rarely collide with the codes
// of the programs `rankd run` passes through (which exits with the job's code).
export const ExitCode = {
  Ok: 0,
  /** Bad flags or arguments. */
  Usage: 64,
  /** The controller refused the request (bad spec, unknown node, …). */
  RemoteFailure: 65,
  /** The controller could not be reached. */
  Unreachable: 69,
  /** Local failure: a file that cannot be read, an internal error. */
  Software: 70,
  /** The token was missing or wrong. */
  Unauthorized: 77,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** An error that ends the CLI with a specific exit code and a one-line message on stderr. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number,
    /** The planner's nearest feasible spec, when the controller refused a placement. */
    readonly suggestion?: Partial<PlacementSpec>,
  ) {
    super(message);
  }
}
