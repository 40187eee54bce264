// The REST API: a fastify instance whose routes are validated and documented by
// the same TypeBox schemas the code is typed with.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { MAX_FRAME_BYTES, RANKD_VERSION } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { NodeRegistry } from '../fleet/node-registry.js';
import type { JobManager } from '../jobs/job-manager.js';
import type { FleetServices } from '../fleet/exec/fleet-services.js';
import { installAuth } from './auth.js';
import { installErrorHandlers } from './errors.js';
import { healthRoutes } from './routes/health.js';
import { jobsRoutes } from './routes/jobs.js';
import { logsRoutes } from './routes/logs.js';
import { nodesRoutes } from './routes/nodes.js';
import { planRoutes } from './routes/plan.js';
import { inventoryRoutes } from './routes/inventory.js';
import { execRoutes } from './routes/exec.js';
import { pingRoutes } from './routes/ping.js';
import { doctorRoutes } from './routes/doctor.js';

export interface ApiDeps {
  log: Logger;
  apiToken: string;
  registry: NodeRegistry;
  jobs: JobManager;
  /** Inventory, exec, ping and doctor; without it those routes are not served. */
  fleet?: FleetServices;
}

export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    bodyLimit: MAX_FRAME_BYTES,
    // probes poll /healthz; their lines would drown the ones that matter
    logController: new LogController({ disableRequestLogging: (request) => request.url === '/healthz' }),
    // requests carry ids in logs; clients may pass their own for correlation
    requestIdHeader: 'x-request-id',
  });
  app.setValidatorCompiler(TypeBoxValidatorCompiler);
  await app.register(swagger, {
    openapi: {
      info: { title: 'rankd controller', version: RANKD_VERSION, description: 'Nodes, facts, rank plans and jobs.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  installErrorHandlers(app);
  installAuth(app, deps.apiToken);
  await app.register(healthRoutes);
  await app.register(nodesRoutes, { registry: deps.registry });
  await app.register(planRoutes, {
    registry: deps.registry,
    pickPort: (node) => deps.jobs.pickPort(node),
    ...(deps.fleet ? { resolveGroup: deps.fleet.inventory.groupResolver() } : {}),
  });
  await app.register(jobsRoutes, { jobs: deps.jobs });
  await app.register(logsRoutes, { jobs: deps.jobs });
  if (deps.fleet) {
    await app.register(inventoryRoutes, { inventory: deps.fleet.inventory });
    await app.register(execRoutes, { exec: deps.fleet.exec });
    await app.register(pingRoutes, { ping: deps.fleet.ping });
    await app.register(doctorRoutes, { doctor: deps.fleet.doctor });
  }
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
