// Jobs over REST: submit, list, inspect, cancel, signal.
import { checkExportedNames, checkJobEnvSize, ErrorCode, RankdError, type JobView } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { JobManager } from '../../jobs/job-manager.js';
import { jobViewJson } from '../../jobs/rank-map-json.js';
import { forbidden, type AccessControl } from '../auth.js';
import { jobFilterOf } from '../job-list-filter.js';
import { refuseRootLoaderEnv } from '../root-target.js';
import { serveRoutes } from '../route-table.js';

/**
 * Job views are serialized with JSON.stringify, not the schema's compiled serializer. A view
 * is built field by field from the records (jobs/job-view.ts), so it holds only what JobView
 * declares, and it grows with the job: 12 MB for 2,000 nodes × 8 ranks, where a compiled
 * serializer's per-key work on every rank's environment would hold the event loop while the
 * agents' rank reports wait; the rank map's JSON is the one the store already made
 * (jobs/rank-map-json.ts). The schema still documents the answer;
 * test/api/job-view-answer.test.ts holds it to the schema.
 */
const jobViewSerializer = {
  serializerCompiler: () => (data: unknown) => (isJobView(data) ? jobViewJson(data) : JSON.stringify(data)),
};

/** Error bodies share these routes' serializer. */
function isJobView(data: unknown): data is JobView {
  return typeof data === 'object' && data !== null && 'rankMap' in data && 'ranks' in data;
}

export async function jobsRoutes(
  app: FastifyInstance,
  opts: { jobs: JobManager; access: AccessControl },
): Promise<void> {
  const { jobs, access } = opts;
  serveRoutes(
    app,
    {
      'POST /v1/jobs': async (request, reply) => {
        // the user of the job is checked (and defaulted) by the auth hook
        // both reach every rank: the placement's (rankd run --env) and the job's own
        const explicitEnv = { ...request.body.placement?.env, ...request.body.env };
        refuseRootLoaderEnv(request.body.user, explicitEnv, 'the job');
        // the CLI checks both before it sends (export-env.ts); other clients meet them here
        checkExportedNames(request.body.exportEnv);
        checkJobEnvSize({ exported: request.body.exportEnv, explicit: explicitEnv });
        const owner = request.principal?.user ?? null;
        const { view, created } = jobs.submit(request.body, owner);
        request.auditResource = { job: view.id };
        if (!created && view.owner !== owner && access.ownerFilter(request.principal, 'jobs.read') !== undefined) {
          throw forbidden(
            `user "${owner}" may not reuse idempotency key "${request.body.idempotencyKey}": ` +
              `it names job ${view.id} of ${view.owner === null ? 'no user' : `"${view.owner}"`}`,
          );
        }
        return reply.code(created ? 201 : 200).send(view);
      },
      'GET /v1/jobs': async (request) => {
        if (request.query.user !== undefined) request.auditResource = { user: request.query.user };
        // a role that reads its own jobs only lists its own
        const ownOnly = access.ownerFilter(request.principal, 'jobs.read');
        return jobs.list(jobFilterOf(request.query, request.principal, ownOnly));
      },
      'GET /v1/jobs/:id': async (request) => {
        const view = jobs.view(request.params.id);
        if (!view) throw new RankdError(ErrorCode.NotFound, `unknown job "${request.params.id}"`);
        return view;
      },
      'POST /v1/jobs/:id/cancel': async (request) => jobs.cancel(request.params.id),
      'POST /v1/jobs/:id/signal': async (request) =>
        jobs.signal(request.params.id, request.body.signal, request.body.rank),
    },
    {
      'POST /v1/jobs': jobViewSerializer,
      'GET /v1/jobs/:id': jobViewSerializer,
      'POST /v1/jobs/:id/cancel': jobViewSerializer,
      'POST /v1/jobs/:id/signal': jobViewSerializer,
    },
  );
}
