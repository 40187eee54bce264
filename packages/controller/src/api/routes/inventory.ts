// The fleet inventory over REST: show it, import a file into it, match a host pattern.
import { ErrorBody, InventoryImport, InventoryView, PatternMatch, PatternQuery } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FleetInventory } from '../../fleet/inventory/inventory-service.js';

export async function inventoryRoutes(app: FastifyInstance, opts: { inventory: FleetInventory }): Promise<void> {
  const { inventory } = opts;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get('/v1/inventory', { schema: { tags: ['fleet'], summary: 'Groups, hosts with their effective vars and agents, and nodes outside the inventory', response: { 200: InventoryView } } }, async () =>
    inventory.view(),
  );

  api.put(
    '/v1/inventory',
    {
      schema: {
        tags: ['fleet'],
        summary: 'Import an Ansible INI inventory or an MPI/DeepSpeed hostfile (replaces the inventory unless merge is set)',
        body: InventoryImport,
        response: { 200: InventoryView, 400: ErrorBody },
      },
    },
    async (request) => inventory.import(request.body),
  );

  api.delete('/v1/inventory', { schema: { tags: ['fleet'], summary: 'Forget the inventory (patterns still reach registered nodes by name)' } }, async (_request, reply) => {
    inventory.clear();
    return reply.code(204).send();
  });

  api.get(
    '/v1/inventory/match',
    { schema: { tags: ['fleet'], summary: 'The hosts a pattern selects, with their nodes and agents', querystring: PatternQuery, response: { 200: PatternMatch, 400: ErrorBody } } },
    async (request) => ({ pattern: request.query.pattern, hosts: inventory.resolve(request.query.pattern) }),
  );
}
