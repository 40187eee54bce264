// Fabric checks over REST: run a net check (operators and admins; audited as every POST),
// and read stored checks back (`rankd check net --last`, the dashboard's Network page).
import type { FastifyInstance } from 'fastify';
import { checkJobEnvSize } from '@rankd/protocol';
import type { AllreduceCheck } from '../../checks/allreduce-check.js';
import type { CheckService } from '../../checks/check-service.js';
import { refuseRootLoaderEnv } from '../root-target.js';
import { serveRoutes } from '../route-table.js';

export async function checksRoutes(
  app: FastifyInstance,
  opts: { checks: CheckService; allreduce?: AllreduceCheck },
): Promise<void> {
  const { checks, allreduce } = opts;
  serveRoutes(app, {
    'POST /v1/checks/net': async (request) => {
      const result = await checks.runNet(request.body, { by: request.principal?.user ?? null });
      request.auditResource = { check: result.id };
      return result;
    },
    // the sweep is a job of the caller's, as its Unix user: the job route's checks of its env hold
    ...(allreduce && {
      'POST /v1/checks/allreduce': async (request) => {
        const user = request.principal?.unixUser ?? undefined;
        refuseRootLoaderEnv(user, request.body.placement.env, 'the sweep');
        checkJobEnvSize({ explicit: request.body.placement.env });
        const result = await allreduce.run(request.body, {
          by: request.principal?.user ?? null,
          user,
          submitted: (job) => (request.auditResource = { job }),
        });
        request.auditResource = { check: result.id, job: result.jobId };
        return result;
      },
    }),
    'GET /v1/checks': async (request) => ({ checks: checks.list(request.query.kind, request.query.limit) }),
    'GET /v1/checks/:id': async (request) => checks.get(request.params.id),
  });
}
