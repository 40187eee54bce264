// The queue, as squeue shows it: running jobs, then queued ones in the order they start.
import { QueueList } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { JobManager } from '../../jobs/job-manager.js';
import { queueList } from '../../jobs/queue-view.js';

export async function queueRoutes(app: FastifyInstance, opts: { jobs: JobManager }): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.get(
    '/v1/queue',
    { schema: { tags: ['jobs'], summary: "Running and queued jobs with owner, state, reason, position, what each asked for and holds (every user's: no command lines or environments)", response: { 200: QueueList } } },
    async () => queueList(opts.jobs),
  );
}
