// Who may do what: each role's grants, over the permissions the route table names.
//
// Every route the controller serves, the shell and stdin WebSockets included, has an entry
// in the route table (@rankd/protocol/routes) that names its permission, or says it is open
// and why. The auth hook refuses a route without an entry (deny by default), so a new route
// is closed until someone decides who may call it. A grant is `all`, or `own` for the role
// `user`: its own jobs only, run as its own Unix user only (checked per job in auth.ts).
import type { Permission, Role, Scope } from '@rankd/protocol';
import { grantOf, routeOf, type RouteGrant } from '@rankd/protocol/routes';

export type { Permission, Scope };
export type RouteRule = RouteGrant;

const READ: Permission[] = [
  'api.read',
  'nodes.read',
  'plan',
  'jobs.read',
  'logs.read',
  'tokens.self',
  'metrics.read',
  'queue.read',
];

export const GRANTS: Readonly<Record<Role, Partial<Record<Permission, Scope>>>> = {
  admin: Object.fromEntries(
    (
      [
        'api.read',
        'nodes.read',
        'plan',
        'jobs.read',
        'jobs.submit',
        'jobs.control',
        'logs.read',
        'inventory.read',
        'inventory.write',
        'exec',
        'ping',
        'doctor',
        'checks.run',
        'shell',
        'tokens.self',
        'users.manage',
        'nodes.manage',
        'nodes.drain',
        'audit.read',
        'metrics.read',
        'queue.read',
        'jobs.priority',
        'jobs.stdin',
      ] as Permission[]
    ).map((p) => [p, 'all']),
  ),
  // a job's stdin is its submitter's: an operator, who acts on every job, still writes only to its own
  operator: {
    ...Object.fromEntries(
      [
        ...READ,
        'jobs.submit',
        'jobs.control',
        'inventory.read',
        'inventory.write',
        'exec',
        'ping',
        'doctor',
        'checks.run',
        'shell',
        'audit.read',
        'nodes.drain',
        'jobs.priority',
      ].map((p) => [p, 'all']),
    ),
    'jobs.stdin': 'own',
  },
  user: {
    'api.read': 'all',
    'nodes.read': 'all',
    plan: 'all',
    'tokens.self': 'all',
    'jobs.read': 'own',
    'logs.read': 'own',
    'jobs.submit': 'own',
    'jobs.control': 'own',
    'jobs.stdin': 'own',
    'queue.read': 'all',
  },
  reader: Object.fromEntries(READ.map((p) => [p, 'all'])),
};

/** The grant a route needs; undefined for a route the table does not have, or says is open. */
export function ruleFor(method: string, route: string): RouteRule | undefined {
  const spec = routeOf(method, route);
  return spec && grantOf(spec);
}

/** Whether the table says anyone may call the route: it authenticates by itself, or says nothing. */
export function isOpen(method: string, route: string): boolean {
  const spec = routeOf(method, route);
  return spec !== undefined && grantOf(spec) === undefined;
}

export function scopeOf(role: Role, permission: Permission): Scope | undefined {
  return GRANTS[role]?.[permission];
}

/** The roles that hold a permission, for refusal messages. */
export function rolesWith(permission: Permission): Role[] {
  return (Object.keys(GRANTS) as Role[]).filter((r) => GRANTS[r][permission] !== undefined);
}
