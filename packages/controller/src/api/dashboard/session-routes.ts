// The dashboard's login: one-time codes for `rankd dashboard`, and the cookie session.
//
// POST /v1/session is the one open API route besides /healthz and enrollment: it is how a
// browser without a token gets a session, with a login code or a pasted API token. Its
// failures count against the same per-address limit as bad tokens. The cookie is HttpOnly
// (page scripts never see it), Secure (the controller speaks TLS only) and SameSite=Strict
// (no other site's page can make the browser send it); state-changing requests made with
// it must also carry the session's CSRF token in X-Rankd-CSRF (auth.ts checks that).
import type { SessionView } from '@rankd/protocol';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AccessControl } from '../auth.js';
import { errorBody } from '../errors.js';
import { GRANTS } from '../policy.js';
import { serveRoutes } from '../route-table.js';
import { SESSION_COOKIE, sessionKey, type DashboardSessions, type OpenedSession } from './sessions.js';

export async function sessionRoutes(
  app: FastifyInstance,
  opts: { sessions: DashboardSessions; access: AccessControl },
): Promise<void> {
  const { sessions, access } = opts;
  serveRoutes(app, {
    'POST /v1/dashboard/login-codes': async (request, reply) => {
      const { code, expiresAt } = sessions.mintCode(request.principal!);
      // the code travels in the fragment: browsers never send it, so no access log records it
      return reply.code(201).send({ path: `/ui/#login=${code}`, expiresAt: new Date(expiresAt).toISOString() });
    },

    'POST /v1/session': async (request, reply) => {
      const body = request.body;
      let opened: OpenedSession | null = null;
      if ('code' in body) opened = sessions.redeem(body.code);
      else {
        const principal = access.authenticate(`Bearer ${body.token}`);
        if (principal) opened = sessions.open(principal);
      }
      if (!opened) {
        const refusal = await access.failed(request.ip);
        if (refusal.retryAfter !== undefined) reply.header('retry-after', String(refusal.retryAfter));
        const message =
          'code' in body ? 'unknown, used or expired login code: run `rankd dashboard` for a new one' : refusal.message;
        return reply
          .code(refusal.status as 401 | 429)
          .send(errorBody(refusal.status, refusal.code, refusal.status === 401 ? message : refusal.message));
      }
      request.principal = opened.principal;
      request.auditResource = { user: opened.principal.user };
      setCookie(reply, opened.id, opened.expiresAt);
      return reply.code(201).send(view(opened.principal, opened.csrf, opened.expiresAt));
    },

    'GET /v1/session': async (request) => {
      const session = request.dashboardSession;
      return view(request.principal!, session?.csrf ?? null, session?.expiresAt ?? null);
    },

    'DELETE /v1/session': async (request, reply) => {
      const id = request.cookies[SESSION_COOKIE];
      if (id) {
        sessions.close(id);
        // what the browser holds open (its /v1/events, a followed log) ends with the session
        access.deps.streams.endSession(sessionKey(id));
      }
      reply.clearCookie(SESSION_COOKIE, { path: '/', secure: true, httpOnly: true, sameSite: 'strict' });
      return reply.code(204).send(null);
    },
  });
}

function setCookie(reply: FastifyReply, id: string, expiresAt: number): void {
  reply.setCookie(SESSION_COOKIE, id, {
    path: '/',
    secure: true,
    httpOnly: true,
    sameSite: 'strict',
    expires: new Date(expiresAt),
  });
}

function view(
  principal: { user: string; role: SessionView['role'] },
  csrf: string | null,
  expiresAt: number | null,
): SessionView {
  return {
    user: principal.user,
    role: principal.role,
    grants: { ...GRANTS[principal.role] },
    csrf,
    expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
  };
}
