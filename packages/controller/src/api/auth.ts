// Bearer-token authentication for every REST route. The only open route is
// /healthz, which says "ok" and nothing else, for process supervisors and probes.
import { ErrorCode } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import { bearerMatches } from '../store/tokens.js';
import { errorBody } from './errors.js';

const OPEN_ROUTES = new Set(['/healthz']);

export function installAuth(app: FastifyInstance, apiToken: string): void {
  app.addHook('onRequest', async (request, reply) => {
    if (OPEN_ROUTES.has(request.url.split('?')[0]!)) return;
    if (!bearerMatches(request.headers.authorization, apiToken)) {
      reply.header('www-authenticate', 'Bearer realm="rankd"');
      return reply.code(401).send(errorBody(401, ErrorCode.Unauthorized, 'missing or wrong API token (Authorization: Bearer <token>)'));
    }
  });
}
