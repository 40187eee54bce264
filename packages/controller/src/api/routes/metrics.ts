// GET /metrics: Prometheus's text format. Behind the same token and policy table as every
// other route (a scraper gets a reader token: Prometheus's `authorization.credentials_file`).
import type { FastifyInstance } from 'fastify';
import type { ControllerMetrics } from '../../metrics/controller-metrics.js';

export async function metricsRoutes(app: FastifyInstance, opts: { metrics: ControllerMetrics }): Promise<void> {
  const schema = {
    tags: ['metrics'],
    summary: "The fleet and the controller in numbers, in Prometheus's text exposition format",
    // documents the media type only: a string payload with its own content type is sent as it is
    response: { 200: { description: "The metrics in Prometheus's text exposition format", content: { 'text/plain': { schema: { type: 'string' } } } } },
  };
  app.get('/metrics', { schema }, async (_request, reply) => {
    const { contentType, text } = await opts.metrics.render();
    return reply.type(contentType).send(text);
  });
}
