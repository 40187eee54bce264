// Ping over REST: a round trip to every agent a pattern selects, with its latency.
import type { FastifyInstance } from 'fastify';
import type { PingService } from '../../fleet/ping/ping-service.js';
import { serveRoutes } from '../route-table.js';

export async function pingRoutes(app: FastifyInstance, opts: { ping: PingService }): Promise<void> {
  serveRoutes(app, { 'POST /v1/ping': async (request) => opts.ping.run(request.body) });
}
