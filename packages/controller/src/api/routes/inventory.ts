// The fleet inventory over REST: show it, import a file into it, match a host pattern.
import type { FastifyInstance } from 'fastify';
import type { FleetInventory } from '../../fleet/inventory/inventory-service.js';
import { serveRoutes } from '../route-table.js';

export async function inventoryRoutes(app: FastifyInstance, opts: { inventory: FleetInventory }): Promise<void> {
  const { inventory } = opts;
  serveRoutes(app, {
    'GET /v1/inventory': async () => inventory.view(),
    'PUT /v1/inventory': async (request) => inventory.import(request.body),
    'DELETE /v1/inventory': async (_request, reply) => {
      inventory.clear();
      return reply.code(204).send();
    },
    'GET /v1/inventory/match': async (request) => ({
      pattern: request.query.pattern,
      hosts: inventory.resolve(request.query.pattern),
    }),
  });
}
