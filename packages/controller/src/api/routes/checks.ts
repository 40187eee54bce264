// Fabric checks over REST: run a net check (operators and admins; audited as every POST),
// and read stored checks back (`rankd check net --last`, the dashboard's Network page).
import type { FastifyInstance } from 'fastify';
import type { CheckService } from '../../checks/check-service.js';
import { serveRoutes } from '../route-table.js';

export async function checksRoutes(app: FastifyInstance, opts: { checks: CheckService }): Promise<void> {
  const { checks } = opts;
  serveRoutes(app, {
    'POST /v1/checks/net': async (request) => {
      const result = await checks.runNet(request.body, { by: request.principal?.user ?? null });
      request.auditResource = { check: result.id };
      return result;
    },
    'GET /v1/checks': async (request) => ({ checks: checks.list(request.query.kind, request.query.limit) }),
    'GET /v1/checks/:id': async (request) => checks.get(request.params.id),
  });
}
