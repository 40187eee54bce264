import { Health, RANKD_VERSION } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';

const startedAt = Date.now();

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { schema: { hide: true, response: { 200: Health } } }, async () => ({
    status: 'ok' as const,
    version: RANKD_VERSION,
    uptimeSeconds: (Date.now() - startedAt) / 1000,
  }));
}
