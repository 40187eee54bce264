// The one registry of rankd's stable error codes. Clients branch on `code`, never on message
// text, so a code once published is never renamed: add new ones instead. Each code is defined
// here once, with the HTTP status of an answer that carries it and a one-line doc;
// docs/errors.md is generated from this file (npm run errors-doc), and
// test/protocol/error-registry.test.ts fails when a RANKD_* code in the sources or the docs
// table is missing here. No TypeBox here: the CLI loads this module before anything else.

/** The HTTP statuses rankd answers errors with. */
export type HttpErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 503;

export interface ErrorDefinition<C extends string = string> {
  readonly code: C;
  /**
   * The status of an HTTP answer (REST, or a refused WebSocket upgrade) that carries the code;
   * null for a code that never reaches HTTP: error frames, close reasons, per-host results,
   * refusals the agent or the CLI makes on its own.
   */
  readonly status: HttpErrorStatus | null;
  /** What the code means, in one line. */
  readonly doc: string;
}

export function defineError<const C extends `RANKD_${string}`>(
  code: C,
  status: HttpErrorStatus | null,
  doc: string,
): ErrorDefinition<C> {
  return { code, status, doc };
}

/** A titled group of definitions, as docs/errors.md shows them. */
export interface ErrorSection {
  readonly title: string;
  readonly errors: readonly ErrorDefinition[];
}

const sections: ErrorSection[] = [];
const byCode = new Map<string, ErrorDefinition>();

type Definitions = Record<string, ErrorDefinition>;
type CodesOf<D extends Definitions> = { readonly [K in keyof D]: D[K]['code'] };

/** Registers a section and returns its codes by name ({ BadFrame: 'RANKD_BAD_FRAME', … }). */
function section<const D extends Definitions>(title: string, definitions: D): CodesOf<D> {
  const codes: Record<string, string> = {};
  for (const [name, definition] of Object.entries(definitions)) {
    if (byCode.has(definition.code)) throw new Error(`error code ${definition.code} is defined twice`);
    byCode.set(definition.code, definition);
    codes[name] = definition.code;
  }
  sections.push({ title, errors: Object.values(definitions) });
  return codes as CodesOf<D>;
}

const requests = section('Requests and connections', {
  BadFrame: defineError(
    'RANKD_BAD_FRAME',
    400,
    'A WebSocket frame that is not JSON or has no string `type`; an agent upgrade without the subprotocol.',
  ),
  InvalidMessage: defineError(
    'RANKD_INVALID_MESSAGE',
    null,
    'A frame whose `type` is known but whose body fails the schema.',
  ),
  UnknownType: defineError('RANKD_UNKNOWN_TYPE', null, 'A frame whose `type` is not in the dispatch map.'),
  TooLarge: defineError('RANKD_TOO_LARGE', 413, 'A frame or body over its size cap.'),
  OutOfOrder: defineError(
    'RANKD_OUT_OF_ORDER',
    null,
    'A valid message not allowed in this connection state (e.g. before hello).',
  ),
  Unauthorized: defineError('RANKD_UNAUTHORIZED', 401, 'A missing or wrong token.'),
  Forbidden: defineError(
    'RANKD_FORBIDDEN',
    403,
    "Authenticated, but the caller's role (or ownership) does not allow the request.",
  ),
  RateLimited: defineError(
    'RANKD_RATE_LIMITED',
    429,
    'Too many failed authentications from one source address; retry after Retry-After.',
  ),
  AuditUnavailable: defineError(
    'RANKD_AUDIT_UNAVAILABLE',
    503,
    'The audit entry of a mutating request could not be written, so the request was not carried out.',
  ),
  Conflict: defineError(
    'RANKD_CONFLICT',
    409,
    'The request conflicts with the current state (a user that exists, the last admin, …).',
  ),
  InvalidRequest: defineError(
    'RANKD_INVALID_REQUEST',
    400,
    'A REST request that fails its schema, or that the HTTP layer refuses (bad JSON, content type).',
  ),
  NotFound: defineError(
    'RANKD_NOT_FOUND',
    404,
    'No such route, job, user or token, or facts a node has not reported yet.',
  ),
  NodeNotFound: defineError('RANKD_NODE_NOT_FOUND', 404, 'No node of that name.'),
  Unreachable: defineError('RANKD_UNREACHABLE', null, 'The controller could not be reached (CLI side).'),
  Internal: defineError('RANKD_INTERNAL', 500, 'An unexpected failure; the controller log has the details.'),
  CsrfRejected: defineError(
    'RANKD_CSRF_REJECTED',
    403,
    "A dashboard session's state-changing request without its CSRF token (X-Rankd-CSRF).",
  ),
  InsecureUrl: defineError(
    'RANKD_INSECURE_URL',
    null,
    'A controller URL that is not https:// (CLI side): refused before anything, the token above all, is sent.',
  ),
  PlaintextOnTlsPort: defineError('RANKD_PLAINTEXT_ON_TLS_PORT', 400, "Plain HTTP on the controller's TLS port."),
  CredentialRevoked: defineError(
    'RANKD_CREDENTIAL_REVOKED',
    null,
    'An open stream, shell or exec ended because its token, user or dashboard session was revoked.',
  ),
  JsonTooDeep: defineError(
    'RANKD_JSON_TOO_DEEP',
    400,
    'A JSON body nested deeper than the controller parses (MAX_JSON_DEPTH).',
  ),
  TooManyConnections: defineError(
    'RANKD_TOO_MANY_CONNECTIONS',
    null,
    'A connection refused: its source address holds too many connections without a node certificate.',
  ),
  ControllerRunning: defineError(
    'RANKD_CONTROLLER_RUNNING',
    null,
    "A controller already holds this data directory's lock (controller.pid): one controller per data directory.",
  ),
  ResponseInvalid: defineError(
    'RANKD_RESPONSE_INVALID',
    null,
    "An answer the route's response schema refuses (CLI side): not JSON, an undeclared status, or another shape.",
  ),
});

// docs/security.md
const enrollment = section('Enrollment and node identity', {
  JoinTokenUnknown: defineError(
    'RANKD_JOIN_TOKEN_UNKNOWN',
    401,
    'A join token that was never issued, or whose secret does not match.',
  ),
  JoinTokenExpired: defineError('RANKD_JOIN_TOKEN_EXPIRED', 401, 'A join token past its expiry.'),
  JoinTokenRevoked: defineError('RANKD_JOIN_TOKEN_REVOKED', 401, 'A join token an admin revoked.'),
  JoinTokenUsed: defineError(
    'RANKD_JOIN_TOKEN_USED',
    401,
    'A join token whose uses are spent (tokens are single-use unless minted with --uses N).',
  ),
  CsrReplayed: defineError(
    'RANKD_CSR_REPLAYED',
    409,
    'A CSR whose public key was already certified: a replay, or a reused key.',
  ),
  CsrInvalid: defineError('RANKD_CSR_INVALID', 400, 'A CSR that is not a valid P-256 certificate request.'),
  CsrTooLarge: defineError('RANKD_CSR_TOO_LARGE', 413, "A CSR over the enrollment routes' size cap."),
  NodeNameInUse: defineError(
    'RANKD_NODE_NAME_IN_USE',
    409,
    'A node name that holds a valid certificate; an admin must `rankd node remove` it first.',
  ),
  InvalidNodeName: defineError('RANKD_INVALID_NODE_NAME', 400, 'A node name that is not a valid host name.'),
  CaHashMismatch: defineError(
    'RANKD_CA_HASH_MISMATCH',
    null,
    "The controller's CA does not match the pinned --ca-hash (agent side).",
  ),
  CaBundleInvalid: defineError(
    'RANKD_CA_BUNDLE_INVALID',
    null,
    'A CA to pin that is not exactly one self-signed CA certificate (none, several, trailing text, not a CA).',
  ),
  ServerCertUntrusted: defineError(
    'RANKD_SERVER_CERT_UNTRUSTED',
    null,
    "The controller's TLS certificate does not verify against the pinned CA (agent side): nothing was sent.",
  ),
  NodeCertRequired: defineError(
    'RANKD_NODE_CERT_REQUIRED',
    401,
    'An agent connection or renewal without a client certificate.',
  ),
  NodeCertExpired: defineError(
    'RANKD_NODE_CERT_EXPIRED',
    401,
    'A node certificate past its expiry: the node must enroll again.',
  ),
  NodeCertRevoked: defineError(
    'RANKD_NODE_CERT_REVOKED',
    401,
    'A node certificate that was revoked (`rankd node remove`).',
  ),
  NodeCertInvalid: defineError(
    'RANKD_NODE_CERT_INVALID',
    401,
    "A client certificate not issued by this controller's CA, or unknown to its store.",
  ),
  NodeIdentityMismatch: defineError(
    'RANKD_NODE_IDENTITY_MISMATCH',
    403,
    "A hello or CSR naming a node other than the certificate's.",
  ),
});

// what one node may tell the controller about others' work (docs/security.md)
const agentMessages = section('Agent messages', {
  ForeignRank: defineError('RANKD_FOREIGN_RANK', null, 'An agent message about a rank that runs on another node.'),
  ForeignJob: defineError(
    'RANKD_FOREIGN_JOB',
    null,
    'An agent message about a job the sending node has no part in (or no such live job).',
  ),
  NotJobLauncher: defineError(
    'RANKD_NOT_JOB_LAUNCHER',
    null,
    "ompi.daemon.request from a node that does not run the job's launcher (mpirun).",
  ),
  OmpiDaemonRefused: defineError(
    'RANKD_OMPI_DAEMON_REFUSED',
    null,
    "An Open MPI daemon asked for out of turn: the job ending, a host not the job's, asked twice, index out of range.",
  ),
  OrtedLaunchInvalid: defineError(
    'RANKD_ORTED_LAUNCH_INVALID',
    null,
    "An orted launch whose values break the grammar (orted-launch.ts), or whose HNP is not the launcher node's.",
  ),
});

const jobs = section('Jobs', {
  JobEnded: defineError('RANKD_JOB_ENDED', 409, 'The job already ended; it cannot be cancelled or signalled.'),
  WouldWait: defineError(
    'RANKD_WOULD_WAIT',
    409,
    '--immediate: the job cannot start now (it would have to wait in the queue).',
  ),
  OverLimit: defineError('RANKD_OVER_LIMIT', 400, 'A job that no per-user limit lets run, however long it waits.'),
  RootLoaderEnv: defineError(
    'RANKD_ROOT_LOADER_ENV',
    400,
    "A root job, exec or rank that sets a loader or libc variable (LD_*, MALLOC_*, GCONV_PATH, … : glibc's list).",
  ),
  EnvTooLarge: defineError(
    'RANKD_ENV_TOO_LARGE',
    400,
    "A job's environment (exported variables and --env together) over JOB_ENV_MAX_BYTES (export-env.ts).",
  ),
  EnvNotExportable: defineError(
    'RANKD_ENV_NOT_EXPORTABLE',
    400,
    'An exported variable rankd never passes from a submitter to ranks (RANKD_*, SLURM_*, PMI wire-up).',
  ),
  StdinRankOutOfRange: defineError(
    'RANKD_STDIN_RANK_OUT_OF_RANGE',
    400,
    "`--input RANK` (a submission's `stdin`) names a rank the job does not have.",
  ),
  StdinUnsupported: defineError(
    'RANKD_STDIN_UNSUPPORTED',
    400,
    "stdin asked of a --pty job or an Open MPI one (its mpirun holds the ranks' stdio).",
  ),
  StdinUnavailable: defineError(
    'RANKD_STDIN_UNAVAILABLE',
    409,
    'A stdin connection to a job that takes no stdin, whose stdin ended, or that already has its writer.',
  ),
});

/** Stable codes of every error that is not a placement, fleet or rank start one. */
export const ErrorCode = { ...requests, ...enrollment, ...agentMessages, ...jobs };
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Stable codes of impossible specs (REST 400 bodies and CLI messages carry them). */
export const PlanErrorCode = section('Placement (the planner)', {
  BadSpec: defineError('RANKD_PLAN_BAD_SPEC', 400, 'The spec contradicts itself (e.g. --nodelist with --group).'),
  NoNodes: defineError('RANKD_PLAN_NO_NODES', 400, 'No candidate node matches the node selection.'),
  UnknownNode: defineError('RANKD_PLAN_UNKNOWN_NODE', 400, '--nodelist names a node that is not a candidate.'),
  NodeCount: defineError(
    'RANKD_PLAN_NODE_COUNT',
    400,
    '-N asks for more nodes than match, or leaves a node without ranks.',
  ),
  TooManyRanks: defineError(
    'RANKD_PLAN_TOO_MANY_RANKS',
    400,
    'More ranks than the nodes can hold (per node count, cores, NUMA nodes, packages).',
  ),
  TooManyCpus: defineError(
    'RANKD_PLAN_TOO_MANY_CPUS',
    400,
    "More compute cores per rank than the rank's share of allowed cores.",
  ),
  CommNoRoom: defineError('RANKD_PLAN_COMM_NO_ROOM', 400, 'Communication workers do not fit beside the compute CPUs.'),
  NoCpus: defineError('RANKD_PLAN_NO_CPUS', 400, 'A node has no allowed CPU at all.'),
  NicNoMatch: defineError(
    'RANKD_PLAN_NIC_NO_MATCH',
    400,
    'A --nic pattern matches no RDMA device with an active port.',
  ),
  TooManyGpus: defineError(
    'RANKD_PLAN_TOO_MANY_GPUS',
    400,
    'More ranks than GPUs with --ranks-per-node gpu, or more GPUs asked than present.',
  ),
});
export type PlanErrorCode = (typeof PlanErrorCode)[keyof typeof PlanErrorCode];

/** Stable codes of fleet errors, in REST bodies and per-host results. */
export const FleetErrorCode = section('Fleet (inventory, exec, ping, doctor, shell)', {
  InventoryParse: defineError(
    'RANKD_INVENTORY_PARSE',
    400,
    'An inventory file that cannot be parsed; the message names file and line.',
  ),
  PatternUnknown: defineError('RANKD_PATTERN_UNKNOWN', 400, 'A host pattern term that names no group, host or node.'),
  PatternInvalid: defineError(
    'RANKD_PATTERN_INVALID',
    400,
    'A host pattern that is not well formed (empty term, bad regex, bad subscript).',
  ),
  NoAgent: defineError('RANKD_NO_AGENT', null, 'The inventory names this host but no agent has registered for it.'),
  AgentUnreachable: defineError(
    'RANKD_AGENT_UNREACHABLE',
    503,
    'The node is known but its agent is not connected, or did not answer in time.',
  ),
  MissingCapability: defineError(
    'RANKD_MISSING_CAPABILITY',
    409,
    'The agent is too old for this operation (no such capability in its hello).',
  ),
  ExecSpawn: defineError('RANKD_EXEC_SPAWN', null, 'The command never ran: no such program, bad cwd.'),
  ExecTimeout: defineError(
    'RANKD_EXEC_TIMEOUT',
    null,
    'The command ran past its timeout and was ended (SIGTERM, then SIGKILL).',
  ),
  ExecUser: defineError('RANKD_EXEC_USER', null, 'The user is unknown, or root where the agent does not allow it.'),
  PtySpawn: defineError('RANKD_PTY_SPAWN', null, 'The terminal program never started.'),
});
export type FleetErrorCode = (typeof FleetErrorCode)[keyof typeof FleetErrorCode];

/**
 * Stable codes of the errors a rank start can end in. The agent (and its C supervisor, which
 * prints them) forwards them to the controller as they are.
 */
export const RankErrorCode = section('Rank start (the agent and its supervisor)', {
  BadLaunch: defineError(
    'RANKD_RANK_BAD_LAUNCH',
    null,
    'The launch request is malformed: job id, rank, argv, env, cpus, cwd.',
  ),
  BadUser: defineError('RANKD_RANK_BAD_USER', null, "The job's user does not exist, or the agent cannot switch to it."),
  RootNotAllowed: defineError(
    'RANKD_RANK_ROOT_NOT_ALLOWED',
    null,
    'The rank would run as root and the runner was not created with allowRoot.',
  ),
  BadCwd: defineError('RANKD_RANK_BAD_CWD', null, 'The working directory does not exist or the user cannot enter it.'),
  ProgramNotFound: defineError(
    'RANKD_RANK_PROGRAM_NOT_FOUND',
    null,
    "argv[0] is not there: no such file, or no such program on the rank's PATH (a shell's 127).",
  ),
  ProgramNotExecutable: defineError(
    'RANKD_RANK_PROGRAM_NOT_EXECUTABLE',
    null,
    "argv[0] is there but cannot be executed: no execute permission, a directory (a shell's 126).",
  ),
  Exists: defineError('RANKD_RANK_EXISTS', null, 'The rank already runs (or ran) on this node and was not forgotten.'),
  JobAborted: defineError(
    'RANKD_RANK_JOB_ABORTED',
    null,
    'The job is being aborted (or was); no new rank of it may start.',
  ),
  JobRunning: defineError('RANKD_RANK_JOB_RUNNING', null, 'forget() of a job that still has live ranks.'),
  NoPinningTool: defineError(
    'RANKD_RANK_NO_PINNING_TOOL',
    null,
    'No longer sent: the C supervisor pins ranks itself. Kept, as every published code.',
  ),
  Pinning: defineError(
    'RANKD_RANK_PINNING',
    null,
    'The native launcher could not set the planned CPU affinity or memory policy.',
  ),
  SpawnFailed: defineError(
    'RANKD_RANK_SPAWN_FAILED',
    null,
    'The supervisor could not be started or died before the rank started.',
  ),
  Cgroup: defineError('RANKD_RANK_CGROUP', null, "The rank's process could not join its cgroup."),
  UserSwitch: defineError(
    'RANKD_RANK_USER_SWITCH',
    null,
    "The supervisor could not drop to the job's user (setgroups/setgid/setuid).",
  ),
  Exec: defineError(
    'RANKD_RANK_EXEC',
    null,
    'Not sent any more (the supervisor names ProgramNotFound or ProgramNotExecutable); kept, as every code.',
  ),
  BadOffset: defineError(
    'RANKD_RANK_BAD_OFFSET',
    null,
    'A read past the end of a stream, or a stream name that does not exist.',
  ),
  Unknown: defineError('RANKD_RANK_UNKNOWN', null, 'signal()/read() of a rank this runner does not know.'),
  NotStarted: defineError(
    'RANKD_RANK_NOT_STARTED',
    null,
    'An Open MPI rank its orted never started before the job ended.',
  ),
  StatusUnknown: defineError('RANKD_RANK_STATUS_UNKNOWN', null, 'A rank that ended without a recorded exit status.'),
});
export type RankErrorCode = (typeof RankErrorCode)[keyof typeof RankErrorCode];

/** Stable codes of fabric checks (`rankd check net`, `rankd check allreduce`) and their probes. */
export const CheckErrorCode = section('Fabric checks', {
  NotFound: defineError('RANKD_CHECK_NOT_FOUND', 404, 'No stored check has this id.'),
  Busy: defineError(
    'RANKD_CHECK_BUSY',
    409,
    'A check is already measuring some of the selected nodes; two would measure each other.',
  ),
  ToolMissing: defineError(
    'RANKD_PROBE_TOOL_MISSING',
    null,
    'The probe program (iperf3, ib_write_bw, ib_write_lat) is not installed on the node.',
  ),
  PortsInUse: defineError('RANKD_PROBE_PORTS_IN_USE', null, 'Every port the controller offered for a probe was taken.'),
  ProbeFailed: defineError(
    'RANKD_PROBE_FAILED',
    null,
    'The probe program ended without a measurement; the message has its last words.',
  ),
  ProbeTimeout: defineError(
    'RANKD_PROBE_TIMEOUT',
    null,
    'The probe ran past its duration and margin and was ended, with its process group.',
  ),
  NoRail: defineError(
    'RANKD_PROBE_NO_RAIL',
    null,
    'The node has no usable address or device on the rail to measure (no such NIC, no address, no GID).',
  ),
  PreflightFailed: defineError(
    'RANKD_PREFLIGHT_FAILED',
    null,
    "A job's preflight (rankd run --preflight) flagged a node its placement cannot leave out, or could not " +
      'measure its nodes: the job ended without starting a rank; the reason has the finding.',
  ),
  UnknownRail: defineError(
    'RANKD_CHECK_UNKNOWN_RAIL',
    400,
    'The --rail of a check names a NIC that none of the selected nodes has: nothing is measured or drained.',
  ),
  SizesInvalid: defineError(
    'RANKD_CHECK_SIZES_INVALID',
    400,
    "The allreduce sweep's sizes are out of order (--min-bytes above --max-bytes) or not numbers.",
  ),
  WouldWait: defineError(
    'RANKD_CHECK_WOULD_WAIT',
    409,
    'The allreduce sweep cannot start now (its nodes are busy or drained); a check never waits in the queue.',
  ),
  NoMpicc: defineError(
    'RANKD_ALLREDUCE_NO_MPICC',
    null,
    "A node has neither nccl-tests' all_reduce_perf nor MPICH's mpicc (Debian: mpich, libmpich-dev) for the sweep.",
  ),
  BuildFailed: defineError(
    'RANKD_ALLREDUCE_BUILD_FAILED',
    null,
    "mpicc could not build rankd's allreduce benchmark on a node, or its cache directory could not be made.",
  ),
});
export type CheckErrorCode = (typeof CheckErrorCode)[keyof typeof CheckErrorCode];

// docs/instances.md: rankd inside a Slurm allocation or a set of pods
export const InstanceErrorCode = section('Instances inside Slurm and pods', {
  JoinSecretInvalid: defineError(
    'RANKD_JOIN_SECRET_INVALID',
    null,
    'A join secret that is not 32 to 256 printable ASCII characters without spaces, or that cannot be read.',
  ),
  JoinSecretMismatch: defineError(
    'RANKD_JOIN_SECRET_MISMATCH',
    null,
    'A controller data directory whose CA was not derived from the join secret it is started with.',
  ),
  NotInAllocation: defineError(
    'RANKD_NOT_IN_ALLOCATION',
    null,
    '`rankd up --slurm` outside a Slurm allocation (no SLURM_JOB_ID), or `--pods` without MASTER_ADDR, RANK, WORLD_SIZE.',
  ),
  NodesNotReady: defineError(
    'RANKD_NODES_NOT_READY',
    null,
    'Nodes of the allocation or pod set whose agents did not come up within `--timeout` (`--allow-partial` goes on without them).',
  ),
  InstanceGone: defineError(
    'RANKD_INSTANCE_GONE',
    null,
    'A controller or agent step of the instance ended while it was starting or running.',
  ),
  InstanceDirLeft: defineError(
    'RANKD_INSTANCE_DIR_LEFT',
    null,
    '`rankd up --slurm` found the instance directory of an instance that does not answer (kept with `--keep`, or an earlier job with the same id): it starts nothing there.',
  ),
  WorkDirUnsafe: defineError(
    'RANKD_WORK_DIR_UNSAFE',
    null,
    'An instance directory that is not a directory of the invoking user closed to others, or a daemon ' +
      'subdirectory in it that rankd did not make: rankd neither writes secrets there nor removes it.',
  ),
  WorkDirInUse: defineError(
    'RANKD_WORK_DIR_IN_USE',
    null,
    "A daemon's subdirectory of the instance directory that a running rankd daemon holds.",
  ),
  InstanceElsewhere: defineError(
    'RANKD_INSTANCE_ELSEWHERE',
    null,
    '`rankd up --slurm` found rankd steps in the job but no instance in its own instance directory: ' +
      'another node of the allocation (or another --work-dir) started one, and this one starts nothing.',
  ),
});
export type InstanceErrorCode = (typeof InstanceErrorCode)[keyof typeof InstanceErrorCode];

/** Every section of the registry, in the order docs/errors.md lists them. */
export const ERROR_SECTIONS: readonly ErrorSection[] = sections;

/** The definition of a code, or undefined for a code rankd never defined. */
export function errorDefinition(code: string): ErrorDefinition | undefined {
  return byCode.get(code);
}

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
