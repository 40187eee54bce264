// Planning without running: the rank map a job of this spec would get now, and
// whether it would start or wait in the queue.
import { ErrorBody, ErrorCode, PlanAnswer, PlanRequest, RankdError } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { JobManager } from '../../jobs/job-manager.js';

export async function planRoutes(app: FastifyInstance, opts: { jobs: JobManager }): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.post(
    '/v1/plan',
    {
      schema: {
        tags: ['plan'],
        summary: 'The rank map a job would get now on the free cores and GPUs; when it would wait, its plan on the idle cluster and why',
        description: 'Takes the `placement` object of POST /v1/jobs. Placement fields at the top level of the body are the deprecated first form, accepted until the next release.',
        body: PlanRequest,
        response: { 200: PlanAnswer, 400: ErrorBody },
      },
    },
    async (request) => {
      const { placement, priority, ...topLevel } = request.body;
      const deprecated = Object.keys(topLevel);
      if (placement !== undefined && deprecated.length > 0) {
        throw new RankdError(ErrorCode.InvalidRequest, `give the placement in "placement" only; ${deprecated.join(', ')} at the top level is the deprecated form`);
      }
      if (deprecated.length > 0) request.log.warn({ fields: deprecated }, 'POST /v1/plan with top-level placement fields, a deprecated form: send them in "placement"');
      return opts.jobs.preview(placement ?? topLevel, priority, request.principal?.user ?? null);
    },
  );
}
