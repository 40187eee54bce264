// Ping over REST: a round trip to every agent a pattern selects, with its latency.
import { ErrorBody, PingReport, PingRequest } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { PingService } from '../../fleet/ping/ping-service.js';

export async function pingRoutes(app: FastifyInstance, opts: { ping: PingService }): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.post(
    '/v1/ping',
    { schema: { tags: ['fleet'], summary: 'Round trip to each selected agent; unreachable ones named', body: PingRequest, response: { 200: PingReport, 400: ErrorBody } } },
    async (request) => opts.ping.run(request.body),
  );
}
