// Every REST route of the controller, declared once: its id (`METHOD /path/:param`), who may
// call it, and its schema (params, query, body, answers; tags and summary for the OpenAPI
// document). The controller registers its fastify routes from this table and attaches its
// handlers by id (api/route-table.ts), its policy reads the permissions here (api/policy.ts),
// and @fastify/swagger documents what was registered. The CLI's client (cli/src/client/rest.ts)
// and the dashboard take their request and answer types from it.
//
// The order is the order of registration, which is the order of the OpenAPI document's paths.
// The WebSocket upgrades are here for their permission only: the gateway dispatches them
// before fastify routes anything (their OpenAPI is controller/src/api/openapi-websockets.ts).
import Type from 'typebox';
import { MAX_CSR_BYTES } from './node-name.js';
import { Facts } from './facts.js';
import { ErrorBody, Health } from './rest/common.js';
import { NodeDrainBody, NodeList, NodeParams, NodeView } from './rest/nodes.js';
import {
  EnrollBody,
  JoinTokenList,
  JoinTokenMint,
  JoinTokenMinted,
  JoinTokenParams,
  JoinTokenView,
  NodeCertificate,
  NodeRemoveParams,
  NodeRemoved,
  RenewBody,
} from './rest/enroll.js';
import { PlanAnswer, PlanRequest, QueueList } from './rest/queue.js';
import {
  JobList,
  JobListQuery,
  JobParams,
  JobSignalRequest,
  JobSubmit,
  JobView,
  LOG_FRAMES_CONTENT_TYPE,
  LogQuery,
} from './rest/jobs.js';
import { LogLine } from './rest/log-stream.js';
import {
  DoctorRequest,
  DoctorResult,
  ExecReport,
  ExecRequest,
  InventoryImport,
  InventoryView,
  PatternMatch,
  PatternQuery,
  PingReport,
  PingRequest,
} from './rest/fleet.js';
import {
  AuditList,
  AuditQuery,
  TokenCreate,
  TokenCreated,
  TokenList,
  TokenParams,
  TokenQuery,
  UserCreate,
  UserList,
  UserParams,
  WhoAmI,
} from './rest/users.js';
import { LoginCode, SessionLogin, SessionView } from './rest/session.js';
import {
  AllreduceCheckRequest,
  AllreduceCheckResult,
  CheckList,
  CheckListQuery,
  CheckParams,
  CheckResult,
  NetCheckRequest,
  NetCheckResult,
} from './rest/checks.js';
import type { Permission } from './rest/permissions.js';

/** Who may call a route: the roles that hold `permission` (docs/security.md). */
export interface RouteGrant {
  permission: Permission;
  /** What the audit log and refusals call it. */
  what: string;
  /** The route names a job by `:id`: a role with an `own` grant may act only on its own jobs. */
  job?: true;
}

/** A route anyone may call: it authenticates by itself (a join token, a certificate, a login code) or says nothing. */
export interface OpenRoute {
  open: string;
}

/** The fastify route schema: validation, serialization and the OpenAPI operation. */
export interface RouteSchema {
  tags?: string[];
  summary?: string;
  description?: string;
  /** The operation's own security; without it, the document's (an API token or a dashboard session). */
  security?: Array<Record<string, string[]>>;
  hide?: boolean;
  produces?: string[];
  params?: Type.TSchema;
  querystring?: Type.TSchema;
  body?: Type.TSchema;
  /** By status; an answer that fastify does not serialize (a stream, a file) is an OpenAPI response object. */
  response?: Record<number, Type.TSchema | Record<string, unknown>>;
}

export interface RouteSpec {
  access: RouteGrant | OpenRoute;
  /** A WebSocket upgrade: in the policy, not a fastify route. */
  upgrade?: true;
  /** Request bodies above this many bytes are refused with 413 before they are read. */
  bodyLimit?: number;
  schema?: RouteSchema;
}

/** The enrollment routes' refusals, which the document's shared 401/403 do not cover: they name their own security. */
const ENROLL_REFUSALS = { 400: ErrorBody, 401: ErrorBody, 409: ErrorBody, 413: ErrorBody };
/** Request bodies of the enroll routes: a CSR plus a token fits well under this; more is RANKD_CSR_TOO_LARGE. */
const ENROLL_BODY_LIMIT = MAX_CSR_BYTES + 1024;
/** A sign-in body holds one code or token: anything bigger is RANKD_TOO_LARGE before it is read. */
const SESSION_BODY_LIMIT = 4096;

// The 200 of the logs in each format, for the document only: the route writes the stream
// itself, so fastify serializes none of it. NDJSON's schema is that of one line.
const LOG_STREAM = {
  description:
    'The output from the offset or Last-Event-ID on, in the asked format; ' +
    'with follow=true it stays open until the job ends',
  content: {
    'text/plain': { schema: { type: 'string', description: 'The bytes alone, as the ranks wrote them' } },
    'application/x-ndjson': {
      schema: {
        ...LogLine,
        description:
          'Each line is one of these: an output record, {"queued"} or {"started"} while a followed job leaves the ' +
          'queue, ' +
          '{"warning": {"node","ranks","message"}} once per node and warning of a followed job, and last {"end"} ' +
          '(or {"revoked"} when the caller\'s token, user or session was revoked)',
      },
    },
    'text/event-stream': {
      schema: {
        type: 'string',
        description:
          'Events `output` (a LogRecord, its id the resume cursor for Last-Event-ID), `queued`, `started`, `warning` ' +
          '({"node","ranks","message"}, once per node and warning) and last `end` ' +
          '(or `revoked`, {"code","message"}); ' +
          'comment lines keep the connection alive',
      },
    },
    [LOG_FRAMES_CONTENT_TYPE]: {
      schema: {
        type: 'string',
        description:
          'Per record a JSON header line {"rank","stream","offset","bytes"} (and "time" with order=time) followed by ' +
          'exactly `bytes` raw bytes; status lines as in NDJSON, and last {"end"} (or {"revoked"})',
      },
    },
  },
};

export const ROUTES = {
  'GET /healthz': { access: { open: 'says "ok" and nothing else' }, schema: { hide: true, response: { 200: Health } } },

  // the dashboard's sign-in and session (controller/src/api/dashboard/session-routes.ts)
  'POST /v1/dashboard/login-codes': {
    access: { permission: 'api.read', what: 'mint a dashboard login code' },
    schema: {
      tags: ['dashboard'],
      summary:
        'A one-time dashboard login code for the calling token (what `rankd dashboard` prints as a URL): ' +
        'good for one use within 5 minutes',
      response: { 201: LoginCode },
    },
  },
  'POST /v1/session': {
    access: { open: 'it authenticates by the login code or API token in its body' },
    bodyLimit: SESSION_BODY_LIMIT,
    schema: {
      tags: ['dashboard'],
      summary:
        'Open a dashboard session with a login code or an API token; sets the HttpOnly session cookie and ' +
        'answers the CSRF token',
      security: [],
      body: SessionLogin,
      response: { 201: SessionView, 400: ErrorBody, 401: ErrorBody, 413: ErrorBody, 429: ErrorBody },
    },
  },
  'GET /v1/session': {
    access: { permission: 'api.read', what: 'read its own session' },
    schema: {
      tags: ['dashboard'],
      summary: 'Who the caller is, and for a dashboard session its CSRF token and expiry',
      response: { 200: SessionView },
    },
  },
  'DELETE /v1/session': {
    access: { permission: 'api.read', what: 'sign out of the dashboard' },
    schema: {
      tags: ['dashboard'],
      summary: 'Sign out: ends the dashboard session and clears its cookie',
      response: { 204: { type: 'null', description: 'signed out' } },
    },
  },
  'GET /v1/events': {
    access: { permission: 'nodes.read', what: 'follow change events' },
    schema: {
      tags: ['dashboard'],
      summary:
        'Server-Sent Events naming what changed: `node` events ({"name"}) and `job` events ({"id"}) for the jobs the ' +
        'caller may read; read the thing itself through the API. A last `revoked` event ({"code","message"}) ends it ' +
        'when its token, user or session is revoked',
      produces: ['text/event-stream'],
      response: {
        200: {
          description: 'an endless text/event-stream',
          content: { 'text/event-stream': { schema: { type: 'string' } } },
        },
      },
    },
  },

  'GET /v1/nodes': {
    access: { permission: 'nodes.read', what: 'list nodes' },
    schema: {
      tags: ['nodes'],
      summary: 'List the nodes, each with its hardware summary and running ranks',
      response: { 200: NodeList },
    },
  },
  'GET /v1/nodes/:name': {
    access: { permission: 'nodes.read', what: 'read a node' },
    schema: {
      tags: ['nodes'],
      summary: 'One node, with its hardware summary and running ranks',
      params: NodeParams,
      response: { 200: NodeView, 404: ErrorBody },
    },
  },
  'GET /v1/nodes/:name/facts': {
    access: { permission: 'nodes.read', what: "read a node's facts" },
    schema: {
      tags: ['nodes'],
      summary: "A node's hardware facts",
      params: NodeParams,
      response: { 200: Facts, 404: ErrorBody },
    },
  },
  // Slurm's `scontrol update nodename=N state=drain reason=R`: no new rank goes to the node, running ranks finish
  'POST /v1/nodes/:name/drain': {
    access: { permission: 'nodes.drain', what: 'drain a node' },
    schema: {
      tags: ['nodes'],
      summary: 'Drain a node: no new ranks, running ones finish',
      params: NodeParams,
      body: NodeDrainBody,
      response: { 200: NodeView, 404: ErrorBody },
    },
  },
  'POST /v1/nodes/:name/resume': {
    access: { permission: 'nodes.drain', what: 'resume a node' },
    schema: {
      tags: ['nodes'],
      summary: 'End a drain: the node takes new ranks again',
      params: NodeParams,
      response: { 200: NodeView, 404: ErrorBody },
    },
  },

  // enrollment: the open routes say so in their schemas (`security`), so that the document
  // does not claim they need an API token
  'GET /v1/enroll/ca': {
    access: { open: 'the CA that clients and agents trust, pinned by its hash' },
    schema: {
      tags: ['enroll'],
      summary: 'The CA certificate clients trust (PEM); pin it by the SHA-256 of its public key',
      security: [],
    },
  },
  'POST /v1/enroll': {
    access: { open: 'it authenticates by the join token in its body' },
    bodyLimit: ENROLL_BODY_LIMIT,
    schema: {
      tags: ['enroll'],
      summary: 'Enroll a node: join token + CSR → node certificate',
      security: [],
      body: EnrollBody,
      response: { 200: NodeCertificate, ...ENROLL_REFUSALS },
    },
  },
  'POST /v1/enroll/renew': {
    access: { open: "it authenticates by the node's client certificate" },
    bodyLimit: ENROLL_BODY_LIMIT,
    schema: {
      tags: ['enroll'],
      summary: "Renew the calling node's certificate (mTLS)",
      security: [{ nodeCertificate: [] }],
      body: RenewBody,
      response: { 200: NodeCertificate, ...ENROLL_REFUSALS, 403: ErrorBody },
    },
  },
  'POST /v1/join-tokens': {
    access: { permission: 'nodes.manage', what: 'mint a join token' },
    schema: {
      tags: ['enroll'],
      summary: 'Mint a join token (shown once)',
      body: JoinTokenMint,
      response: { 200: JoinTokenMinted, 400: ErrorBody },
    },
  },
  'GET /v1/join-tokens': {
    access: { permission: 'nodes.manage', what: 'list join tokens' },
    schema: {
      tags: ['enroll'],
      summary: 'Join tokens (ids and state; never the secrets)',
      response: { 200: JoinTokenList },
    },
  },
  'DELETE /v1/join-tokens/:id': {
    access: { permission: 'nodes.manage', what: 'revoke a join token' },
    schema: {
      tags: ['enroll'],
      summary: 'Revoke a join token',
      params: JoinTokenParams,
      response: { 200: JoinTokenView },
    },
  },
  'DELETE /v1/nodes/:name': {
    access: { permission: 'nodes.manage', what: 'remove a node' },
    schema: {
      tags: ['nodes'],
      summary: 'Remove a node: revoke its certificates and drop its link',
      params: NodeRemoveParams,
      response: { 200: NodeRemoved, 404: ErrorBody },
    },
  },

  'POST /v1/plan': {
    access: { permission: 'plan', what: 'plan a rank map' },
    schema: {
      tags: ['plan'],
      summary:
        'The rank map a job would get now on the free cores and GPUs; ' +
        'when it would wait, its plan on the idle cluster and why',
      description:
        'Takes the `placement` object of POST /v1/jobs. Placement fields at the top level of the body are the ' +
        'deprecated first form, accepted until the next release.',
      body: PlanRequest,
      response: { 200: PlanAnswer, 400: ErrorBody },
    },
  },

  'POST /v1/jobs': {
    access: { permission: 'jobs.submit', what: 'submit a job' },
    schema: {
      tags: ['jobs'],
      summary: 'Plan and start a job (an existing idempotency key returns that job with 200)',
      body: JobSubmit,
      response: { 200: JobView, 201: JobView, 400: ErrorBody },
    },
  },
  'GET /v1/jobs': {
    access: { permission: 'jobs.read', what: 'list jobs' },
    schema: {
      tags: ['jobs'],
      summary: 'Recent jobs, newest first, filtered by state, owner, submission time or id prefix',
      querystring: JobListQuery,
      response: { 200: JobList, 400: ErrorBody, 403: ErrorBody },
    },
  },
  'GET /v1/jobs/:id': {
    access: { permission: 'jobs.read', job: true, what: 'read job' },
    schema: {
      tags: ['jobs'],
      summary: 'One job with its rank map and the actual binding of every rank',
      params: JobParams,
      response: { 200: JobView, 404: ErrorBody },
    },
  },
  'POST /v1/jobs/:id/cancel': {
    access: { permission: 'jobs.control', job: true, what: 'cancel job' },
    schema: {
      tags: ['jobs'],
      summary: 'Cancel: SIGTERM every rank, the grace period, then SIGKILL',
      params: JobParams,
      response: { 200: JobView, 404: ErrorBody, 409: ErrorBody },
    },
  },
  'POST /v1/jobs/:id/signal': {
    access: { permission: 'jobs.control', job: true, what: 'signal job' },
    schema: {
      tags: ['jobs'],
      summary: "Send a signal to one rank's process group, or all",
      params: JobParams,
      body: JobSignalRequest,
      response: { 200: JobView, 404: ErrorBody, 409: ErrorBody },
    },
  },
  'GET /v1/queue': {
    access: { permission: 'queue.read', what: 'read the queue' },
    schema: {
      tags: ['jobs'],
      summary:
        'Running and queued jobs with owner, state, reason, position, what each asked for and holds ' +
        "(every user's: no command lines or environments)",
      response: { 200: QueueList },
    },
  },
  'GET /v1/jobs/:id/logs': {
    access: { permission: 'logs.read', job: true, what: 'read the logs of job' },
    schema: {
      tags: ['jobs'],
      summary:
        "A job's output: text, NDJSON records, an SSE stream (the default with follow=true), or binary frames; " +
        'every format resumes from Last-Event-ID',
      params: JobParams,
      querystring: LogQuery,
      response: { 200: LOG_STREAM, 404: ErrorBody, 400: ErrorBody },
    },
  },

  'GET /v1/inventory': {
    access: { permission: 'inventory.read', what: 'read the inventory' },
    schema: {
      tags: ['fleet'],
      summary: 'Groups, hosts with their effective vars and agents, and nodes outside the inventory',
      response: { 200: InventoryView },
    },
  },
  'PUT /v1/inventory': {
    access: { permission: 'inventory.write', what: 'import an inventory' },
    schema: {
      tags: ['fleet'],
      summary:
        'Import an Ansible INI inventory or an MPI/DeepSpeed hostfile (replaces the inventory unless merge is set)',
      body: InventoryImport,
      response: { 200: InventoryView, 400: ErrorBody },
    },
  },
  'DELETE /v1/inventory': {
    access: { permission: 'inventory.write', what: 'clear the inventory' },
    schema: { tags: ['fleet'], summary: 'Forget the inventory (patterns still reach registered nodes by name)' },
  },
  'GET /v1/inventory/match': {
    access: { permission: 'inventory.read', what: 'match a host pattern' },
    schema: {
      tags: ['fleet'],
      summary: 'The hosts a pattern selects, with their nodes and agents',
      querystring: PatternQuery,
      response: { 200: PatternMatch, 400: ErrorBody },
    },
  },
  'POST /v1/exec': {
    access: { permission: 'exec', what: 'exec a command on nodes' },
    schema: {
      tags: ['fleet'],
      summary: 'Run a command on every host a pattern selects, in parallel',
      body: ExecRequest,
      response: { 200: ExecReport, 400: ErrorBody },
    },
  },
  'POST /v1/ping': {
    access: { permission: 'ping', what: 'ping agents' },
    schema: {
      tags: ['fleet'],
      summary: 'Round trip to each selected agent; unreachable ones named',
      body: PingRequest,
      response: { 200: PingReport, 400: ErrorBody },
    },
  },
  'POST /v1/doctor': {
    access: { permission: 'doctor', what: 'run the doctor' },
    schema: {
      tags: ['fleet'],
      summary: 'Preflight checks of the selected nodes (memlock, RDMA, NUMA, consistency, clocks, paths, reachability)',
      body: DoctorRequest,
      response: { 200: DoctorResult, 400: ErrorBody },
    },
  },
  // fabric checks: running one loads every selected link for seconds, so only operators and admins may
  'POST /v1/checks/net': {
    access: { permission: 'checks.run', what: 'run a fabric check' },
    schema: {
      tags: ['checks'],
      summary: 'Pairwise bandwidth and latency of the selected nodes (round-robin schedule), outliers flagged',
      body: NetCheckRequest,
      response: { 200: NetCheckResult, 400: ErrorBody, 409: ErrorBody },
    },
  },
  'POST /v1/checks/allreduce': {
    access: { permission: 'checks.run', what: 'run a fabric check' },
    schema: {
      tags: ['checks'],
      summary: "An allreduce sweep run as a job of the caller's, placed and pinned as a job is; busbw per size",
      body: AllreduceCheckRequest,
      response: { 200: AllreduceCheckResult, 400: ErrorBody, 403: ErrorBody, 409: ErrorBody },
    },
  },
  'GET /v1/checks': {
    access: { permission: 'nodes.read', what: 'read fabric checks' },
    schema: {
      tags: ['checks'],
      summary: 'Stored fabric checks, newest first',
      querystring: CheckListQuery,
      response: { 200: CheckList, 400: ErrorBody },
    },
  },
  'GET /v1/checks/:id': {
    access: { permission: 'nodes.read', what: 'read a fabric check' },
    schema: {
      tags: ['checks'],
      summary: 'One stored fabric check, whole',
      params: CheckParams,
      response: { 200: CheckResult, 404: ErrorBody },
    },
  },

  // users and tokens: a non-admin sees, creates and revokes its own tokens only (checked per token)
  'GET /v1/whoami': {
    access: { permission: 'api.read', what: 'read its own identity' },
    schema: {
      tags: ['users'],
      summary: 'The caller: user, role, Unix user, and the token or session it authenticated with',
      response: { 200: WhoAmI },
    },
  },
  'GET /v1/users': {
    access: { permission: 'users.manage', what: 'list users' },
    schema: { tags: ['users'], summary: 'The users with their roles and Unix users', response: { 200: UserList } },
  },
  'POST /v1/users': {
    access: { permission: 'users.manage', what: 'add a user' },
    schema: {
      tags: ['users'],
      summary: 'Add a user; the answer holds its first API token, shown this once',
      body: UserCreate,
      response: { 201: TokenCreated, 400: ErrorBody, 409: ErrorBody },
    },
  },
  'DELETE /v1/users/:name': {
    access: { permission: 'users.manage', what: 'remove a user' },
    schema: {
      tags: ['users'],
      summary: 'Remove a user and revoke its tokens',
      params: UserParams,
      response: { 204: Type.Null(), 404: ErrorBody, 409: ErrorBody },
    },
  },
  'GET /v1/tokens': {
    access: { permission: 'tokens.self', what: 'list tokens' },
    schema: {
      tags: ['users'],
      summary: "Token accessors (never secrets): the caller's, or everyone's for an admin",
      querystring: TokenQuery,
      response: { 200: TokenList },
    },
  },
  'POST /v1/tokens': {
    access: { permission: 'tokens.self', what: 'create a token' },
    schema: {
      tags: ['users'],
      summary: 'Create an API token (shown this once) for the caller, or for another user (admin)',
      body: TokenCreate,
      response: { 201: TokenCreated, 403: ErrorBody, 404: ErrorBody },
    },
  },
  'DELETE /v1/tokens/:accessor': {
    access: { permission: 'tokens.self', what: 'revoke a token' },
    schema: {
      tags: ['users'],
      summary: 'Revoke a token: it fails from the next request on',
      params: TokenParams,
      response: { 204: Type.Null(), 403: ErrorBody, 404: ErrorBody },
    },
  },
  'GET /v1/audit': {
    access: { permission: 'audit.read', what: 'read the audit log' },
    schema: {
      tags: ['audit'],
      summary: 'The audit log: entries since a time (oldest first), or the newest ones',
      querystring: AuditQuery,
      response: { 200: AuditList, 400: ErrorBody },
    },
  },
  'GET /metrics': {
    access: { permission: 'metrics.read', what: 'read the metrics' },
    schema: {
      tags: ['metrics'],
      summary: "The fleet and the controller in numbers, in Prometheus's text exposition format",
      // documents the media type only: a string payload with its own content type is sent as it is
      response: {
        200: {
          description: "The metrics in Prometheus's text exposition format",
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
      },
    },
  },
  'GET /v1/openapi.json': {
    access: { permission: 'api.read', what: 'read the API document' },
    schema: {
      tags: ['api'],
      summary: 'This document: the REST API in OpenAPI 3.1',
      response: { 200: { description: 'The OpenAPI 3.1 document', type: 'object', additionalProperties: true } },
    },
  },

  'GET /v1/shell': { access: { permission: 'shell', what: 'open a shell' }, upgrade: true },
  // the stdin WebSocket names its job in the query (?job=ID); the stdin relay checks the owner
  'GET /v1/stdin': { access: { permission: 'jobs.stdin', what: 'write to the stdin of job' }, upgrade: true },
} satisfies Record<string, RouteSpec>;

export type Routes = typeof ROUTES;
export type RouteId = keyof Routes;

/** The routes fastify serves: all but the WebSocket upgrades. */
export type ServedRouteId = { [Id in RouteId]: Routes[Id] extends { upgrade: true } ? never : Id }[RouteId];

// What a client sends and gets on a route, as types: the CLI's client and the dashboard's.
type SchemaOf<Id extends RouteId> = Routes[Id] extends { schema: infer S } ? S : never;
type StaticOf<S> = S extends Type.TSchema ? Type.Static<S> : never;
type Responses<Id extends RouteId> = SchemaOf<Id> extends { response: infer R } ? R : Record<never, never>;
/** The statuses whose answer is a JSON body (204 has none). */
export type JsonSuccess = 200 | 201;

export type RouteParams<Id extends RouteId> = SchemaOf<Id> extends { params: infer P } ? StaticOf<P> : undefined;
export type RouteQuery<Id extends RouteId> = SchemaOf<Id> extends { querystring: infer Q } ? StaticOf<Q> : undefined;
export type RouteBody<Id extends RouteId> = SchemaOf<Id> extends { body: infer B } ? StaticOf<B> : undefined;
/** The JSON answer of a route's success; undefined for a route that answers none (204, a stream, a file). */
export type RouteAnswer<Id extends RouteId> = [keyof Responses<Id> & JsonSuccess] extends [never]
  ? undefined
  : { [S in keyof Responses<Id> & JsonSuccess]: StaticOf<Responses<Id>[S]> }[keyof Responses<Id> & JsonSuccess];

/** The route's grant, or undefined for an open route. */
export function grantOf(spec: RouteSpec): RouteGrant | undefined {
  return 'permission' in spec.access ? spec.access : undefined;
}

/** The table entry of a request's method and matched route pattern; HEAD is GET's. */
export function routeOf(method: string, pattern: string): RouteSpec | undefined {
  return (ROUTES as Record<string, RouteSpec>)[`${method === 'HEAD' ? 'GET' : method} ${pattern}`];
}
