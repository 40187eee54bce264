// Planning without running: the rank map a job of this spec would get now, and
// whether it would start or wait in the queue.
import { ErrorCode, RankdError } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { JobManager } from '../../jobs/job-manager.js';
import { serveRoutes } from '../route-table.js';

export async function planRoutes(app: FastifyInstance, opts: { jobs: JobManager }): Promise<void> {
  serveRoutes(app, {
    'POST /v1/plan': async (request) => {
      const { placement, priority, ...topLevel } = request.body;
      const deprecated = Object.keys(topLevel);
      if (placement !== undefined && deprecated.length > 0) {
        throw new RankdError(
          ErrorCode.InvalidRequest,
          `give the placement in "placement" only; ${deprecated.join(', ')} at the top level is the deprecated form`,
        );
      }
      if (deprecated.length > 0) {
        const why = 'POST /v1/plan with top-level placement fields, a deprecated form: send them in "placement"';
        request.log.warn({ fields: deprecated }, why);
      }
      return opts.jobs.preview(placement ?? topLevel, priority, request.principal?.user ?? null);
    },
  });
}
