// The REST API: a fastify instance whose routes are validated and documented by
// the same TypeBox schemas the code is typed with.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import rateLimit from '@fastify/rate-limit';
import cookie from '@fastify/cookie';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { MAX_FRAME_BYTES } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { NodeRegistry } from '../nodes/node-registry.js';
import type { JobManager } from '../jobs/job-manager.js';
import type { FleetServices } from '../fleet/exec/fleet-services.js';
import type { CheckService } from '../checks/check-service.js';
import { installAuth, type AccessControl } from './auth.js';
import type { UsersRepo } from '../store/users-repo.js';
import { usersRoutes } from './routes/users.js';
import { auditRoutes, installAudit } from './audit.js';
import type { AuditLog } from '../store/audit-log.js';
import { installErrorHandlers } from './errors.js';
import { installJsonParser } from './json-body.js';
import { openapiRoutes, swaggerOptions } from './openapi.js';
import { healthRoutes } from './routes/health.js';
import { jobsRoutes } from './routes/jobs.js';
import { logsRoutes } from './routes/logs.js';
import { nodesRoutes } from './routes/nodes.js';
import { planRoutes } from './routes/plan.js';
import { queueRoutes } from './routes/queue.js';
import { inventoryRoutes } from './routes/inventory.js';
import { execRoutes } from './routes/exec.js';
import { pingRoutes } from './routes/ping.js';
import { doctorRoutes } from './routes/doctor.js';
import { checksRoutes } from './routes/checks.js';
import type { AllreduceCheck } from '../checks/allreduce-check.js';
import { enrollRoutes, type EnrollDeps } from './routes/enroll.js';
import { metricsRoutes } from './routes/metrics.js';
import type { ControllerMetrics } from '../metrics/controller-metrics.js';
import { eventsRoutes } from './routes/events.js';
import { DashboardSessions } from './dashboard/sessions.js';
import type { SessionsRepo } from '../store/sessions-repo.js';
import { sessionRoutes } from './dashboard/session-routes.js';
import { dashboardFiles } from './dashboard/static-routes.js';

export interface ApiDeps {
  log: Logger;
  access: AccessControl;
  users: UsersRepo;
  /** Where dashboard sessions are kept. */
  sessions: SessionsRepo;
  audit: AuditLog;
  registry: NodeRegistry;
  jobs: JobManager;
  /** Failed authentications allowed per source address and window before 429 (default 20 a minute). */
  authFailures?: { max: number; windowMs: number };
  /** `rankd check net` (probes by the agents); without it the check routes are not served. */
  checks?: CheckService;
  /** `rankd check allreduce` (a sweep run as a job); without it its route is not served. */
  allreduce?: AllreduceCheck;
  /** Inventory, exec, ping and doctor; without it those routes are not served. */
  fleet?: FleetServices;
  /** fastify's https options (always given by the controller; tests of routes alone may omit them). */
  https?: Record<string, unknown>;
  /** fastify sets these two on its server itself, over what the https options say (tls/connection-guard.ts). */
  timeouts?: { keepAliveMs: number; requestMs: number };
  /** Enrollment routes; without them those routes are not served. */
  enroll?: EnrollDeps;
  /** GET /metrics and the request counters; without it neither is served. */
  metrics?: ControllerMetrics;
  /** Commits the agents' open write batch: no answer leaves before what it reports is stored. */
  flushWrites?: () => void;
  /** Where the built dashboard is (default: packages/dashboard/dist beside this package). */
  dashboardRoot?: string;
}

export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // the assertion fixes fastify's logger type parameter, which would be inferred as pino's Logger
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    loggerInstance: deps.log as FastifyBaseLogger,
    bodyLimit: MAX_FRAME_BYTES,
    // probes poll /healthz; their lines would drown the ones that matter
    logController: new LogController({ disableRequestLogging: (request) => request.url === '/healthz' }),
    // requests carry ids in logs; clients may pass their own for correlation
    requestIdHeader: 'x-request-id',
    ...(deps.https ? { https: deps.https } : {}),
    ...(deps.timeouts ? { keepAliveTimeout: deps.timeouts.keepAliveMs, requestTimeout: deps.timeouts.requestMs } : {}),
  });
  app.setValidatorCompiler(TypeBoxValidatorCompiler);
  installJsonParser(app);
  await app.register(swagger, swaggerOptions);
  installErrorHandlers(app);
  // Failed authentications are counted per source address and answered 429 with Retry-After
  // past the limit. global: false: the plugin limits no route by itself; the auth hook asks it
  // only about failures, so requests with a valid token are never counted nor limited.
  await app.register(rateLimit, { global: false });
  const { max, windowMs } = deps.authFailures ?? { max: 20, windowMs: 60_000 };
  const countFailure = app.createRateLimit({ max, timeWindow: windowMs, keyGenerator: (req) => req.ip });
  // the limiter reads only the key (ip, by our keyGenerator) and routeOptions.config: a shim of
  // those two serves the shell's WebSocket upgrades, which are not fastify requests
  deps.access.limiter = async (req) => {
    const r = await countFailure(req as unknown as FastifyRequest);
    return r.isAllowed
      ? { isExceeded: false, ttlInSeconds: 0 }
      : { isExceeded: r.isExceeded, ttlInSeconds: r.ttlInSeconds };
  };
  // parses the session cookie in an onRequest hook, which must run before the auth hook's
  await app.register(cookie);
  const sessions = new DashboardSessions(deps.users, deps.sessions, (key) =>
    deps.access.deps.streams.endSession(
      key,
      'its dashboard session was ended: its user opened more than the sessions a user may hold',
    ),
  );
  deps.access.sessions = sessions;
  installAuth(app, deps.access);
  installAudit(app, deps.audit);
  const flushWrites = deps.flushWrites;
  if (flushWrites) {
    app.addHook('onSend', (_request, _reply, payload, done) => {
      flushWrites();
      done(null, payload);
    });
  }
  const metrics = deps.metrics;
  if (metrics) {
    // Counted once answered, refusals included, on every route registered below. The label is
    // the matched pattern, so job ids never become label values; unmatched URLs share a series.
    app.addHook('onResponse', async (request, reply) => {
      metrics.request(
        request.method,
        request.routeOptions.url ?? '(unmatched)',
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
    });
  }
  await app.register(healthRoutes);
  await app.register(sessionRoutes, { sessions, access: deps.access });
  await app.register(eventsRoutes, {
    registry: deps.registry,
    jobs: deps.jobs,
    access: deps.access,
    checks: deps.checks,
  });
  await app.register(dashboardFiles, { ...(deps.dashboardRoot ? { root: deps.dashboardRoot } : {}) });
  await app.register(nodesRoutes, { registry: deps.registry, jobs: deps.jobs });
  if (deps.enroll) await app.register(enrollRoutes, deps.enroll);
  await app.register(planRoutes, { jobs: deps.jobs });
  await app.register(jobsRoutes, { jobs: deps.jobs, access: deps.access });
  await app.register(queueRoutes, { jobs: deps.jobs });
  await app.register(logsRoutes, { jobs: deps.jobs, access: deps.access });
  if (deps.fleet) {
    await app.register(inventoryRoutes, { inventory: deps.fleet.inventory });
    await app.register(execRoutes, { exec: deps.fleet.exec });
    await app.register(pingRoutes, { ping: deps.fleet.ping });
    await app.register(doctorRoutes, { doctor: deps.fleet.doctor });
  }
  if (deps.checks) await app.register(checksRoutes, { checks: deps.checks, allreduce: deps.allreduce });
  await app.register(usersRoutes, { users: deps.users });
  await app.register(auditRoutes, { audit: deps.audit });
  if (metrics) await app.register(metricsRoutes, { metrics });
  await app.register(openapiRoutes);
  return app;
}
