// Who may do what: the one table of route → permission, and each role's grants.
//
// Every route the controller serves, the shell WebSocket included, has an entry here;
// the auth hook refuses a route without one (deny by default), so a new route is closed
// until someone decides who may call it. A grant is `all`, or `own` for the role `user`:
// its own jobs only, run as its own Unix user only (checked per job in auth.ts).
import type { Permission, Role, Scope } from '@rankd/protocol';

export type { Permission, Scope };

export interface RouteRule {
  permission: Permission;
  /** The route names a job by `:id`: a role with an `own` grant may act only on its own jobs. */
  job?: true;
  /** What the audit log calls it. */
  what: string;
}

/** `METHOD /route/pattern` → rule. HEAD is checked as GET. */
export const ROUTE_POLICY: Readonly<Record<string, RouteRule>> = {
  'GET /v1/openapi.json': { permission: 'api.read', what: 'read the API document' },
  'GET /v1/whoami': { permission: 'api.read', what: 'read its own identity' },
  'GET /v1/nodes': { permission: 'nodes.read', what: 'list nodes' },
  'GET /v1/nodes/:name': { permission: 'nodes.read', what: 'read a node' },
  'GET /v1/nodes/:name/facts': { permission: 'nodes.read', what: "read a node's facts" },
  'POST /v1/plan': { permission: 'plan', what: 'plan a rank map' },
  'GET /v1/queue': { permission: 'queue.read', what: 'read the queue' },
  'POST /v1/jobs': { permission: 'jobs.submit', what: 'submit a job' },
  'GET /v1/jobs': { permission: 'jobs.read', what: 'list jobs' },
  'GET /v1/jobs/:id': { permission: 'jobs.read', job: true, what: 'read job' },
  'POST /v1/jobs/:id/cancel': { permission: 'jobs.control', job: true, what: 'cancel job' },
  'POST /v1/jobs/:id/signal': { permission: 'jobs.control', job: true, what: 'signal job' },
  'GET /v1/jobs/:id/logs': { permission: 'logs.read', job: true, what: 'read the logs of job' },
  'GET /v1/inventory': { permission: 'inventory.read', what: 'read the inventory' },
  'GET /v1/inventory/match': { permission: 'inventory.read', what: 'match a host pattern' },
  'PUT /v1/inventory': { permission: 'inventory.write', what: 'import an inventory' },
  'DELETE /v1/inventory': { permission: 'inventory.write', what: 'clear the inventory' },
  'POST /v1/exec': { permission: 'exec', what: 'exec a command on nodes' },
  'POST /v1/ping': { permission: 'ping', what: 'ping agents' },
  'POST /v1/doctor': { permission: 'doctor', what: 'run the doctor' },
  'GET /v1/shell': { permission: 'shell', what: 'open a shell' },
  // the stdin WebSocket names its job in the query (?job=ID); jobs/stdin-relay.ts checks the owner
  'GET /v1/stdin': { permission: 'jobs.stdin', what: 'write to the stdin of job' },
  'GET /v1/users': { permission: 'users.manage', what: 'list users' },
  'POST /v1/users': { permission: 'users.manage', what: 'add a user' },
  'DELETE /v1/users/:name': { permission: 'users.manage', what: 'remove a user' },
  'GET /v1/tokens': { permission: 'tokens.self', what: 'list tokens' },
  'POST /v1/tokens': { permission: 'tokens.self', what: 'create a token' },
  'DELETE /v1/tokens/:accessor': { permission: 'tokens.self', what: 'revoke a token' },
  'GET /v1/audit': { permission: 'audit.read', what: 'read the audit log' },
  'POST /v1/join-tokens': { permission: 'nodes.manage', what: 'mint a join token' },
  'GET /v1/join-tokens': { permission: 'nodes.manage', what: 'list join tokens' },
  'DELETE /v1/join-tokens/:id': { permission: 'nodes.manage', what: 'revoke a join token' },
  'DELETE /v1/nodes/:name': { permission: 'nodes.manage', what: 'remove a node' },
  'POST /v1/nodes/:name/drain': { permission: 'nodes.drain', what: 'drain a node' },
  'POST /v1/nodes/:name/resume': { permission: 'nodes.drain', what: 'resume a node' },
  'GET /metrics': { permission: 'metrics.read', what: 'read the metrics' },
  // the dashboard: its session (POST /v1/session is open: it authenticates by its body) and change events
  'POST /v1/dashboard/login-codes': { permission: 'api.read', what: 'mint a dashboard login code' },
  'GET /v1/session': { permission: 'api.read', what: 'read its own session' },
  'DELETE /v1/session': { permission: 'api.read', what: 'sign out of the dashboard' },
  'GET /v1/events': { permission: 'nodes.read', what: 'follow change events' },
};

const READ: Permission[] = ['api.read', 'nodes.read', 'plan', 'jobs.read', 'logs.read', 'tokens.self', 'metrics.read', 'queue.read'];

export const GRANTS: Readonly<Record<Role, Partial<Record<Permission, Scope>>>> = {
  admin: Object.fromEntries(
    (['api.read', 'nodes.read', 'plan', 'jobs.read', 'jobs.submit', 'jobs.control', 'logs.read', 'inventory.read', 'inventory.write', 'exec', 'ping', 'doctor', 'shell', 'tokens.self', 'users.manage', 'nodes.manage', 'nodes.drain', 'audit.read', 'metrics.read', 'queue.read', 'jobs.priority', 'jobs.stdin'] as Permission[]).map((p) => [p, 'all']),
  ),
  // a job's stdin is its submitter's: an operator, who acts on every job, still writes only to its own
  operator: { ...Object.fromEntries([...READ, 'jobs.submit', 'jobs.control', 'inventory.read', 'inventory.write', 'exec', 'ping', 'doctor', 'shell', 'audit.read', 'nodes.drain', 'jobs.priority'].map((p) => [p, 'all'])), 'jobs.stdin': 'own' },
  user: { 'api.read': 'all', 'nodes.read': 'all', plan: 'all', 'tokens.self': 'all', 'jobs.read': 'own', 'logs.read': 'own', 'jobs.submit': 'own', 'jobs.control': 'own', 'jobs.stdin': 'own', 'queue.read': 'all' },
  reader: Object.fromEntries(READ.map((p) => [p, 'all'])),
};

export function ruleFor(method: string, route: string): RouteRule | undefined {
  return ROUTE_POLICY[`${method === 'HEAD' ? 'GET' : method} ${route}`];
}

export function scopeOf(role: Role, permission: Permission): Scope | undefined {
  return GRANTS[role]?.[permission];
}

/** The roles that hold a permission, for refusal messages. */
export function rolesWith(permission: Permission): Role[] {
  return (Object.keys(GRANTS) as Role[]).filter((r) => GRANTS[r][permission] !== undefined);
}
