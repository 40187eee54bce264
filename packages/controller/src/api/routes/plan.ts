// Planning without running: the rank map a job of this spec would get now, and
// whether it would start or wait in the queue.
import { ErrorBody, PlanAnswer, PlanRequest } from '@rankd/protocol';
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
        body: PlanRequest,
        response: { 200: PlanAnswer, 400: ErrorBody },
      },
    },
    async (request) => {
      const { priority, ...spec } = request.body;
      return opts.jobs.preview(spec, priority, request.principal?.user ?? null);
    },
  );
}
