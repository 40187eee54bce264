// GET /metrics: Prometheus's text format. Behind the same token and policy table as every
// other route (a scraper gets a reader token: Prometheus's `authorization.credentials_file`).
import type { FastifyInstance } from 'fastify';
import type { ControllerMetrics } from '../../metrics/controller-metrics.js';
import { serveRoutes } from '../route-table.js';

export async function metricsRoutes(app: FastifyInstance, opts: { metrics: ControllerMetrics }): Promise<void> {
  serveRoutes(app, {
    'GET /metrics': async (_request, reply) => {
      const { contentType, text } = await opts.metrics.render();
      return reply.type(contentType).send(text);
    },
  });
}
