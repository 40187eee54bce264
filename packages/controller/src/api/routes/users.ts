// Users and API tokens over REST, and whoami. Who may call each route is in the route table;
// the one rule here is per token: a non-admin sees, creates and revokes its own only.
import { ErrorCode, RankdError } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { Principal, TokenRecord, UsersRepo } from '../../store/users-repo.js';
import { forbidden } from '../auth.js';
import { serveRoutes } from '../route-table.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const tokenView = (t: TokenRecord) => ({
  accessor: t.accessor,
  user: t.user,
  description: t.description,
  createdAt: iso(t.createdAt)!,
  lastUsedAt: iso(t.lastUsedAt),
});

export async function usersRoutes(app: FastifyInstance, opts: { users: UsersRepo }): Promise<void> {
  const { users } = opts;
  const me = (p: Principal | null): Principal => {
    if (!p) throw new RankdError(ErrorCode.Unauthorized, 'no principal');
    return p;
  };

  serveRoutes(app, {
    'GET /v1/whoami': async (request) => {
      const p = me(request.principal);
      // the token authenticated this very request: gone now only if revoked in between
      const token = users.token(p.accessor);
      if (!token) throw new RankdError(ErrorCode.Unauthorized, `token ${p.accessor} was revoked`);
      const session = request.dashboardSession;
      const credential = {
        kind: session ? ('dashboard-session' as const) : ('api-token' as const),
        createdAt: iso(token.createdAt)!,
        expiresAt: session ? iso(session.expiresAt) : null,
        description: token.description,
      };
      return { name: p.user, role: p.role, unixUser: p.unixUser, accessor: p.accessor, credential };
    },

    'GET /v1/users': async () => ({
      users: users.list().map((u) => ({
        name: u.name,
        role: u.role,
        unixUser: u.unixUser,
        createdAt: iso(u.createdAt)!,
        tokens: u.tokens,
      })),
    }),

    'POST /v1/users': async (request, reply) => {
      const { name, role } = request.body;
      if (users.get(name)) throw new RankdError(ErrorCode.Conflict, `user "${name}" exists`);
      // a user runs jobs as its own Unix user: by default the one of its name
      const unixUser = request.body.unixUser ?? (role === 'user' ? name : null);
      if (role === 'user' && unixUser === 'root') {
        throw new RankdError(ErrorCode.InvalidRequest, 'a user of role "user" cannot have the Unix user root');
      }
      const { accessor, token } = users.add({ name, role, unixUser, createdAt: Date.now() });
      request.auditResource = { user: name, accessor };
      return reply.code(201).send({ name, role, unixUser, accessor, token });
    },

    'DELETE /v1/users/:name': async (request, reply) => {
      const { name } = request.params;
      const user = users.get(name);
      if (!user) throw new RankdError(ErrorCode.NotFound, `unknown user "${name}"`);
      if (user.role === 'admin' && users.admins() === 1) {
        throw new RankdError(ErrorCode.Conflict, `user "${name}" is the last admin; add another admin first`);
      }
      users.remove(name);
      return reply.code(204).send(null);
    },

    'GET /v1/tokens': async (request) => {
      const p = me(request.principal);
      const user = request.query.user ?? (p.role === 'admin' ? undefined : p.user);
      if (user !== undefined && user !== p.user && p.role !== 'admin') {
        const who = `user "${p.user}" (role ${p.role})`;
        throw forbidden(`${who} may not list the tokens of "${user}": that needs the role admin`);
      }
      return { tokens: users.tokens(user).map(tokenView) };
    },

    'POST /v1/tokens': async (request, reply) => {
      const p = me(request.principal);
      const name = request.body.user ?? p.user;
      if (name !== p.user && p.role !== 'admin') {
        const who = `user "${p.user}" (role ${p.role})`;
        throw forbidden(`${who} may not create a token for "${name}": that needs the role admin`);
      }
      const user = users.get(name);
      if (!user) throw new RankdError(ErrorCode.NotFound, `unknown user "${name}"`);
      const { accessor, token } = users.addToken(name, request.body.description ?? '');
      request.auditResource = { user: name, accessor };
      return reply.code(201).send({ name, role: user.role, unixUser: user.unixUser, accessor, token });
    },

    'DELETE /v1/tokens/:accessor': async (request, reply) => {
      const p = me(request.principal);
      const token = users.token(request.params.accessor);
      if (!token || (token.user !== p.user && p.role !== 'admin')) {
        // another user's token is not even confirmed to exist
        const whose = p.role === 'admin' ? '' : ` among the tokens of "${p.user}"`;
        throw new RankdError(ErrorCode.NotFound, `no token ${request.params.accessor}${whose}`);
      }
      users.revoke(token.accessor);
      request.auditResource = { user: token.user, accessor: token.accessor };
      return reply.code(204).send(null);
    },
  });
}
