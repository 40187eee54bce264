// The audit hooks of the REST API, and GET /v1/audit.
//
// Recorded: every mutating request (POST, PUT, PATCH, DELETE), begun before its handler
// runs and failing with 503 RANKD_AUDIT_UNAVAILABLE when that entry cannot be written;
// dashboard sign-ins, once answered; and every refusal (401, 403, 429, 413, a JSON body too
// deep), whatever the method. The store counts 401, 429, 413 and too-deep per source and
// minute rather than one entry each (store/audit-refusals.ts); a 403 is always its own entry.
// Reads that succeed are not recorded (log streams would drown the log). Shell sessions are
// recorded by ShellRelay.
import { ErrorCode, RankdError, SINCE_FORMS, parseSince } from '@rankd/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditLog, AuditStart } from '../store/audit-log.js';
import { serveRoutes } from './route-table.js';

declare module 'fastify' {
  interface FastifyRequest {
    auditId: string | null;
    /** The message of an error answer, for the entry's reason. */
    auditReason: string | null;
    /** The stable code of an error answer. */
    auditCode: string | null;
  }
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REFUSALS = new Set([401, 403, 413, 429]);
/** Refused for its body, not for its caller: 400, but recorded like the other refusals. */
const REFUSED_CODES = new Set<string>([ErrorCode.JsonTooDeep]);

/** The entry's request part: principal, source, route, the resource named in the path, argv, the names of its environment. */
export function auditStart(request: FastifyRequest): AuditStart {
  const p = request.principal;
  const params = (request.params ?? {}) as Record<string, unknown>;
  const body = (request.body ?? {}) as Record<string, unknown>;
  const resource: Record<string, string> = {};
  const route = request.routeOptions.url;
  if (typeof params['id'] === 'string') resource['job'] = params['id'];
  if (typeof params['name'] === 'string') resource[route?.startsWith('/v1/users') ? 'user' : 'node'] = params['name'];
  if (typeof params['accessor'] === 'string') resource['accessor'] = params['accessor'];
  if (typeof body['pattern'] === 'string') resource['pattern'] = body['pattern'];
  if (typeof body['user'] === 'string') resource['unixUser'] = body['user'];
  const command = body['command'];
  const argv =
    Array.isArray(command) && command.every((a) => typeof a === 'string')
      ? command
      : typeof body['shell'] === 'string'
        ? ['/bin/sh', '-c', body['shell']]
        : null;
  // a job's or exec's environment, by name only: its values may be secrets
  const placement = body['placement'];
  const envNames = [
    ...new Set([...keysOf(body['env']), ...keysOf(isObject(placement) ? placement['env'] : undefined)]),
  ];
  return {
    user: p?.user ?? null,
    role: p?.role ?? null,
    accessor: p?.accessor ?? null,
    source: request.ip,
    method: request.method,
    route: route ?? request.url.split('?')[0]!.slice(0, 512),
    resource,
    argv,
    envNames: envNames.length > 0 ? envNames : null,
    decision: 'allow',
    reason: '',
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const keysOf = (v: unknown): string[] => (isObject(v) ? Object.keys(v) : []);

export function installAudit(app: FastifyInstance, audit: AuditLog): void {
  app.decorateRequest('auditId', null);
  app.decorateRequest('auditReason', null);
  app.decorateRequest('auditCode', null);
  // registered after the auth hooks: it runs only for requests they let through
  app.addHook('preHandler', async (request) => {
    if (!MUTATING.has(request.method) || !request.principal) return;
    try {
      request.auditId = audit.begin(auditStart(request));
    } catch (err) {
      request.log.error({ err }, 'audit entry not written: request refused');
      throw new RankdError(
        ErrorCode.AuditUnavailable,
        `the audit log cannot be written (${(err as Error).message}); the request was not carried out`,
      );
    }
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400 && typeof payload === 'string') {
      try {
        const body = JSON.parse(payload) as { message?: string; code?: string };
        request.auditReason = body.message ?? null;
        request.auditCode = body.code ?? null;
      } catch {
        // not our error shape
      }
    }
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    const durationMs = reply.elapsedTime;
    const denied = REFUSALS.has(status) || REFUSED_CODES.has(request.auditCode ?? '');
    if (request.auditId) {
      audit.finish(request.auditId, {
        status,
        durationMs,
        resource: request.auditResource,
        ...(denied ? { decision: 'deny' as const } : {}),
        ...(request.auditReason ? { reason: request.auditReason } : {}),
      });
      return;
    }
    // a dashboard sign-in learns who it is from its own body, after the preHandler hook: it is
    // recorded once answered (the code or token in its body never is)
    const signedIn = !denied && MUTATING.has(request.method) && request.principal !== null;
    if (!denied && !signedIn) return;
    try {
      const start = auditStart(request);
      const resource = { ...start.resource, ...(request.auditResource ?? {}) };
      const decision = denied ? ('deny' as const) : ('allow' as const);
      audit.record(
        { ...start, resource, decision, reason: denied ? (request.auditReason ?? String(status)) : '' },
        { status, durationMs, ...(request.auditCode ? { code: request.auditCode } : {}) },
      );
    } catch (err) {
      request.log.error({ err }, 'cannot record a request in the audit log');
    }
  });
}

export async function auditRoutes(app: FastifyInstance, opts: { audit: AuditLog }): Promise<void> {
  serveRoutes(app, {
    'GET /v1/audit': async (request) => {
      const { since, limit } = request.query;
      let at: number | null = null;
      if (since !== undefined) {
        // the rule `rankd audit --since` checks before it asks
        at = parseSince(since, Date.now());
        if (!Number.isFinite(at))
          throw new RankdError(
            ErrorCode.InvalidRequest,
            `since=${since}: ${SINCE_FORMS}, or milliseconds since the epoch`,
          );
      }
      return { entries: opts.audit.list(at, limit ?? 1000) };
    },
  });
}
