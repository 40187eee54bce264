// Stable error codes. Clients branch on `code`, never on message text, so a code
// once published is never renamed; add new ones instead.
export const ErrorCode = {
  /** A WebSocket frame that is not JSON, or not an object with a string `type`. */
  BadFrame: 'RANKD_BAD_FRAME',
  /** A frame whose `type` is known but whose body fails the schema. */
  InvalidMessage: 'RANKD_INVALID_MESSAGE',
  /** A frame whose `type` is not in the dispatch map. */
  UnknownType: 'RANKD_UNKNOWN_TYPE',
  /** A frame or body over the size cap. */
  TooLarge: 'RANKD_TOO_LARGE',
  /** A message that is valid but not allowed in this connection state (e.g. before hello). */
  OutOfOrder: 'RANKD_OUT_OF_ORDER',
  /** Missing or wrong token. */
  Unauthorized: 'RANKD_UNAUTHORIZED',
  /** A REST request that fails its schema. */
  InvalidRequest: 'RANKD_INVALID_REQUEST',
  NotFound: 'RANKD_NOT_FOUND',
  NodeNotFound: 'RANKD_NODE_NOT_FOUND',
  /** The job already ended; it cannot be cancelled or signalled. */
  JobEnded: 'RANKD_JOB_ENDED',
  /** The controller could not be reached (CLI side). */
  Unreachable: 'RANKD_UNREACHABLE',
  Internal: 'RANKD_INTERNAL',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** An error with a stable code, carried as-is in error frames and REST error bodies. */
export class RankdError extends Error {
  override readonly name: string = 'RankdError';
  constructor(
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}
