// The queue, as squeue shows it: running jobs, then queued ones in the order they start.
import type { FastifyInstance } from 'fastify';
import type { JobManager } from '../../jobs/job-manager.js';
import { queueList } from '../../jobs/queue-view.js';
import { serveRoutes } from '../route-table.js';

export async function queueRoutes(app: FastifyInstance, opts: { jobs: JobManager }): Promise<void> {
  serveRoutes(app, { 'GET /v1/queue': async () => queueList(opts.jobs) });
}
