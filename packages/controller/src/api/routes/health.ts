import { RANKD_VERSION } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import { serveRoutes } from '../route-table.js';

const startedAt = Date.now();

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  serveRoutes(app, {
    'GET /healthz': async () => ({
      status: 'ok' as const,
      version: RANKD_VERSION,
      uptimeSeconds: (Date.now() - startedAt) / 1000,
    }),
  });
}
