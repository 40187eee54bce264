// Authentication and authorization of every request, in one place.
//
// Each request's bearer token is looked up among the users' tokens (auth: who). Its route
// is looked up in the route table of @rankd/protocol, whose grants api/policy.ts reads
// (authz: may this role do that); a route without an entry is refused, so nothing is open by
// omission. Job routes then check the job's owner for roles whose grant is `own`, and a
// submission by such a role runs as its own Unix user only. The shell and stdin WebSockets
// go through the same checks (their relays call `authorizeUpgrade`). The open routes are
// those the table says are open: /healthz, which says "ok" and nothing else, and enrollment
// and the dashboard's sign-in, which authenticate by what they carry.
import type { IncomingMessage } from 'node:http';
import { DEFAULT_PRIORITY, ErrorCode, RankdError, type JobSubmit, type Permission, type Scope } from '@rankd/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal, UsersRepo } from '../store/users-repo.js';
import type { AuditLog } from '../store/audit-log.js';
import type { OpenStreams } from '../streams/open-streams.js';
import type { Refusal, UpgradeAccess, UpgradeVerdict } from '../streams/upgrade-access.js';
import { errorBody } from './errors.js';
import { isOpen, rolesWith, ruleFor, scopeOf, type RouteRule } from './policy.js';
import { CSRF_HEADER, SESSION_COOKIE, csrfMatches, type DashboardSessions } from './dashboard/sessions.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who sent the request, once its token matched. */
    principal: Principal | null;
    /** The policy entry of its route. */
    rule: RouteRule | null;
    /** What a handler acted on (a created job, a user, a token accessor), for the audit log. */
    auditResource: Record<string, string> | null;
    /**
     * Set when the request came with a dashboard session cookie instead of a bearer token;
     * `key` names it in streams/open-streams.ts.
     */
    dashboardSession: { key: string; csrf: string; expiresAt: number } | null;
  }
}

// the dashboard's files hold no data (every datum comes through the API); the browser must load
// them before it can sign in
const isDashboardFile = (route: string): boolean => route === '/' || route === '/ui' || route.startsWith('/ui/');
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const UNAUTHORIZED = 'missing, wrong or revoked API token (Authorization: Bearer <token>)';

/** Counts a failed authentication from the request's source; says whether that source is over its limit. */
export type FailureLimiter = (req: {
  ip: string;
  routeOptions: object;
}) => Promise<{ isExceeded: boolean; ttlInSeconds: number }>;

export interface AccessDeps {
  users: UsersRepo;
  /** Where shell sessions and refused upgrades are recorded. */
  audit: AuditLog;
  /** A job's owner: a name, null for jobs without one, undefined when there is no such job. */
  jobOwner: (id: string) => string | null | undefined;
  /** The open streams and shells, ended when what opened them is revoked. */
  streams: OpenStreams;
}

export function forbidden(message: string): RankdError {
  return new RankdError(ErrorCode.Forbidden, message);
}

/** The checks, shared by the REST hooks and the WebSocket upgrades. */
export class AccessControl implements UpgradeAccess {
  /** Set once the REST API is built (its rate-limit plugin holds the counters). */
  limiter: FailureLimiter | null = null;
  /** Dashboard sessions; without them only bearer tokens authenticate. */
  sessions: DashboardSessions | null = null;

  constructor(readonly deps: AccessDeps) {}

  /** A failed authentication: 429 with the seconds to wait once the source is over its limit, else 401. */
  async failed(source: string): Promise<Refusal & { retryAfter?: number }> {
    const verdict = this.limiter ? await this.limiter({ ip: source, routeOptions: {} }) : null;
    if (verdict?.isExceeded) {
      return {
        status: 429,
        code: ErrorCode.RateLimited,
        message: `too many failed authentications from ${source}; retry in ${verdict.ttlInSeconds} s`,
        retryAfter: verdict.ttlInSeconds,
      };
    }
    return { status: 401, code: ErrorCode.Unauthorized, message: UNAUTHORIZED };
  }

  authenticate(header: string | undefined): Principal | null {
    return this.deps.users.authenticate(header);
  }

  /** Role check of a route: the refusal's message, or null when allowed. */
  checkRoute(principal: Principal, method: string, route: string): { rule: RouteRule | null; refusal: string | null } {
    const rule = ruleFor(method, route) ?? null;
    if (!rule)
      return { rule, refusal: `${method} ${route} is refused: it has no entry in the access policy (deny by default)` };
    if (scopeOf(principal.role, rule.permission)) return { rule, refusal: null };
    return {
      rule,
      refusal: `user "${principal.user}" (role ${principal.role}) may not ${rule.what}: that needs the role ${rolesWith(rule.permission).join(' or ')}`,
    };
  }

  /** Ownership of a job for a role that acts on its own jobs only; throws 403. Unknown jobs pass (the route answers 404). */
  checkJob(principal: Principal, rule: RouteRule, id: string): void {
    if (scopeOf(principal.role, rule.permission) !== 'own') return;
    const owner = this.deps.jobOwner(id);
    if (owner === undefined || owner === principal.user) return;
    throw forbidden(
      `user "${principal.user}" (role ${principal.role}) may not ${rule.what} ${id}: it belongs to ${owner === null ? 'no user (it predates users)' : `"${owner}"`}, and the role ${principal.role} acts on its own jobs only`,
    );
  }

  /** The submission as it runs: a role that runs jobs as its own Unix user only runs as it when it names none. Changes nothing. */
  normalizeSubmit(principal: Principal, submit: JobSubmit): JobSubmit {
    const mine = principal.unixUser;
    if (scopeOf(principal.role, 'jobs.submit') !== 'own' || submit.user !== undefined || !mine) return submit;
    return { ...submit, user: mine };
  }

  /** Whether the principal may make this (normalized) submission; throws 403. A role that runs jobs as its own Unix user only may run none other. */
  checkSubmit(principal: Principal, submit: JobSubmit): void {
    if (
      submit.priority !== undefined &&
      submit.priority > DEFAULT_PRIORITY &&
      !scopeOf(principal.role, 'jobs.priority')
    ) {
      throw forbidden(
        `user "${principal.user}" (role ${principal.role}) may not submit above the default priority ${DEFAULT_PRIORITY} (--priority ${submit.priority}); operators and admins may`,
      );
    }
    if (scopeOf(principal.role, 'jobs.submit') !== 'own') return;
    const mine = principal.unixUser;
    if (!mine)
      throw forbidden(
        `user "${principal.user}" (role ${principal.role}) may not submit jobs: it has no Unix user (an admin sets one with "rankd user add ${principal.user} --role user --unix-user U")`,
      );
    if (mine === 'root' || submit.user === 'root' || submit.user === '0') {
      throw forbidden(`user "${principal.user}" (role ${principal.role}) may not run jobs as root`);
    }
    if (submit.user !== undefined && submit.user !== mine) {
      throw forbidden(
        `user "${principal.user}" (role ${principal.role}) may not run jobs as Unix user "${submit.user}": its jobs run as "${mine}" only`,
      );
    }
  }

  scopeOf(principal: Principal, permission: Permission): Scope | undefined {
    return scopeOf(principal.role, permission);
  }

  /** The owner a listing is limited to, when the caller's grant is `own`. */
  ownerFilter(principal: Principal | null, permission: Permission): string | undefined {
    if (!principal) return undefined;
    return scopeOf(principal.role, permission) === 'own' ? principal.user : undefined;
  }

  /** Authentication and role check of a WebSocket upgrade on `route`. */
  async authorizeUpgrade(req: IncomingMessage, route: string): Promise<UpgradeVerdict> {
    const principal = this.authenticate(req.headers.authorization);
    if (!principal) return { principal, refusal: await this.failed(req.socket.remoteAddress ?? 'unknown') };
    const { refusal } = this.checkRoute(principal, req.method ?? 'GET', route);
    if (refusal) return { principal, refusal: { status: 403, code: ErrorCode.Forbidden, message: refusal } };
    return { principal };
  }
}

export function installAuth(app: FastifyInstance, access: AccessControl): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('rule', null);
  app.decorateRequest('auditResource', null);
  app.decorateRequest('dashboardSession', null);
  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions.url;
    // the route table says which routes are open and why (enrollment, a dashboard sign-in, /healthz)
    if (route !== undefined && (isOpen(request.method, route) || isDashboardFile(route))) return;
    let principal = access.authenticate(request.headers.authorization);
    // a session cookie counts only on a request without an Authorization header: a wrong
    // token is a 401, never silently replaced by whoever else is signed in in that browser
    const sessionId = request.headers.authorization === undefined ? request.cookies?.[SESSION_COOKIE] : undefined;
    const session = sessionId && access.sessions ? access.sessions.lookup(sessionId) : null;
    if (session) {
      if (!SAFE_METHODS.has(request.method) && !csrfMatches(request.headers[CSRF_HEADER], session.csrf)) {
        return reply
          .code(403)
          .send(
            errorBody(
              403,
              ErrorCode.CsrfRejected,
              `a dashboard session's ${request.method} request needs its CSRF token in the ${CSRF_HEADER} header`,
            ),
          );
      }
      principal = session.principal;
      request.dashboardSession = { key: session.key, csrf: session.csrf, expiresAt: session.expiresAt };
    }
    if (!principal) {
      const refusal = await access.failed(request.ip);
      if (refusal.retryAfter !== undefined) reply.header('retry-after', String(refusal.retryAfter));
      else reply.header('www-authenticate', 'Bearer realm="rankd"');
      return reply.code(refusal.status).send(errorBody(refusal.status, refusal.code, refusal.message));
    }
    request.principal = principal;
  });
  // the role check runs once the body is parsed (so that a refusal's audit entry can name
  // the argv it refused) and before it is validated (so that a refusal is not a 400)
  app.addHook('preValidation', async (request, reply) => {
    const route = request.routeOptions.url;
    const principal = request.principal;
    // no route matched: the not-found handler answers 404 to the authenticated caller
    if (!principal || route === undefined) return;
    const { rule, refusal } = access.checkRoute(principal, request.method, route);
    request.rule = rule;
    if (refusal) return reply.code(403).send(errorBody(403, ErrorCode.Forbidden, refusal));
  });
  // after validation: the ids and bodies are well-formed by now
  app.addHook('preHandler', async (request: FastifyRequest) => {
    const { principal, rule } = request;
    if (!principal || !rule) return;
    if (rule.job) access.checkJob(principal, rule, (request.params as { id: string }).id);
    if (rule.permission === 'jobs.submit') {
      const submit = access.normalizeSubmit(principal, request.body as JobSubmit);
      access.checkSubmit(principal, submit);
      request.body = submit;
    }
  });
}
