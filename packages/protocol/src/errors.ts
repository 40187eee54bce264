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
  /** Authenticated, but the caller's role (or ownership) does not allow the request. */
  Forbidden: 'RANKD_FORBIDDEN',
  /** Too many failed authentications from one source address; retry after Retry-After. */
  RateLimited: 'RANKD_RATE_LIMITED',
  /** The audit entry of a mutating request could not be written, so the request was not carried out. */
  AuditUnavailable: 'RANKD_AUDIT_UNAVAILABLE',
  /** The request conflicts with the current state (a user that exists, the last admin, …). */
  Conflict: 'RANKD_CONFLICT',
  /** A REST request that fails its schema. */
  InvalidRequest: 'RANKD_INVALID_REQUEST',
  NotFound: 'RANKD_NOT_FOUND',
  NodeNotFound: 'RANKD_NODE_NOT_FOUND',
  /** The job already ended; it cannot be cancelled or signalled. */
  JobEnded: 'RANKD_JOB_ENDED',
  /** The controller could not be reached (CLI side). */
  Unreachable: 'RANKD_UNREACHABLE',
  Internal: 'RANKD_INTERNAL',
  // Enrollment and node identity (docs/security.md)
  /** A join token that was never issued, or whose secret does not match. */
  JoinTokenUnknown: 'RANKD_JOIN_TOKEN_UNKNOWN',
  JoinTokenExpired: 'RANKD_JOIN_TOKEN_EXPIRED',
  JoinTokenRevoked: 'RANKD_JOIN_TOKEN_REVOKED',
  /** A join token whose uses are spent (tokens are single-use unless minted with --uses N). */
  JoinTokenUsed: 'RANKD_JOIN_TOKEN_USED',
  /** A CSR whose public key was already certified: a replay, or a reused key. */
  CsrReplayed: 'RANKD_CSR_REPLAYED',
  CsrInvalid: 'RANKD_CSR_INVALID',
  CsrTooLarge: 'RANKD_CSR_TOO_LARGE',
  /** A node name that holds a valid certificate; an admin must `rankd node remove` it first. */
  NodeNameInUse: 'RANKD_NODE_NAME_IN_USE',
  InvalidNodeName: 'RANKD_INVALID_NODE_NAME',
  /** The controller's CA does not match the pinned --ca-hash (agent side). */
  CaHashMismatch: 'RANKD_CA_HASH_MISMATCH',
  /** A CA to pin that is not exactly one self-signed CA certificate (none, several, trailing text, not a CA). */
  CaBundleInvalid: 'RANKD_CA_BUNDLE_INVALID',
  /** The controller's TLS certificate does not verify against the pinned CA (agent side): nothing was sent. */
  ServerCertUntrusted: 'RANKD_SERVER_CERT_UNTRUSTED',
  NodeCertRequired: 'RANKD_NODE_CERT_REQUIRED',
  NodeCertExpired: 'RANKD_NODE_CERT_EXPIRED',
  NodeCertRevoked: 'RANKD_NODE_CERT_REVOKED',
  /** A client certificate not issued by this controller's CA, or unknown to its store. */
  NodeCertInvalid: 'RANKD_NODE_CERT_INVALID',
  /** A hello or CSR naming a node other than the certificate's. */
  NodeIdentityMismatch: 'RANKD_NODE_IDENTITY_MISMATCH',
  /** An agent message about a rank that runs on another node. */
  ForeignRank: 'RANKD_FOREIGN_RANK',
  /** An agent message about a job the sending node has no part in (or no such live job). */
  ForeignJob: 'RANKD_FOREIGN_JOB',
  /** ompi.daemon.request from a node that does not run the job's launcher (mpirun). */
  NotJobLauncher: 'RANKD_NOT_JOB_LAUNCHER',
  /** An Open MPI daemon asked for out of turn: the job is ending, the host is not the job's, the daemon or host was already asked for, or its index is out of range. */
  OmpiDaemonRefused: 'RANKD_OMPI_DAEMON_REFUSED',
  /** An orted launch whose values break the grammar (orted-launch.ts), or whose HNP is not the launcher node's. */
  OrtedLaunchInvalid: 'RANKD_ORTED_LAUNCH_INVALID',
  /** --immediate: the job cannot start now (it would have to wait in the queue). */
  WouldWait: 'RANKD_WOULD_WAIT',
  /** A job that no per-user limit lets run, however long it waits. */
  OverLimit: 'RANKD_OVER_LIMIT',
  /** A dashboard session's state-changing request without its CSRF token (X-Rankd-CSRF). */
  CsrfRejected: 'RANKD_CSRF_REJECTED',
  /** A controller URL that is not https:// (CLI side): refused before anything, the token above all, is sent. */
  InsecureUrl: 'RANKD_INSECURE_URL',
  /** Plain HTTP on the controller's TLS port. */
  PlaintextOnTlsPort: 'RANKD_PLAINTEXT_ON_TLS_PORT',
  /**
   * A job, exec or rank that runs as root and sets a loader or libc variable (LD_*, MALLOC_*,
   * GCONV_PATH, … : glibc's list for set-uid programs). Refused by the controller when the
   * request names root, and by the agent, which knows, always.
   */
  RootLoaderEnv: 'RANKD_ROOT_LOADER_ENV',
  /**
   * An open log stream, event stream or shell was ended because what opened it no longer
   * authenticates: its token was revoked, its user removed, or its dashboard session ended.
   */
  CredentialRevoked: 'RANKD_CREDENTIAL_REVOKED',
  /** A JSON body nested deeper than the controller parses (MAX_JSON_DEPTH). */
  JsonTooDeep: 'RANKD_JSON_TOO_DEEP',
  /** A connection refused because its source address holds too many connections that carry no node certificate. */
  TooManyConnections: 'RANKD_TOO_MANY_CONNECTIONS',
  /** A job whose environment (exported variables and --env together) is over JOB_ENV_MAX_BYTES (export-env.ts). */
  EnvTooLarge: 'RANKD_ENV_TOO_LARGE',
  /** An exported variable rankd never passes from a submitter to ranks (RANKD_*, SLURM_*, PMI wire-up: export-env.ts). */
  EnvNotExportable: 'RANKD_ENV_NOT_EXPORTABLE',
  /** `--input RANK` (a submission's `stdin`) names a rank the job does not have. */
  StdinRankOutOfRange: 'RANKD_STDIN_RANK_OUT_OF_RANGE',
  /** stdin asked of a job that cannot take it: a --pty job, or an Open MPI one (its mpirun holds the ranks' stdio). */
  StdinUnsupported: 'RANKD_STDIN_UNSUPPORTED',
  /** A stdin connection to a job that takes no stdin, whose stdin already ended, or that already has its writer. */
  StdinUnavailable: 'RANKD_STDIN_UNAVAILABLE',
  /** A controller already holds this data directory's lock (controller.pid): one controller per data directory. */
  ControllerRunning: 'RANKD_CONTROLLER_RUNNING',
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
