// Planning without running: the rank map the controller would use for a spec.
import { ErrorBody, PlacementSpec, RankMap } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { NodeRegistry } from '../../fleet/node-registry.js';
import { planRankMap, type GroupResolver } from '../../planner/index.js';

export interface PlanRouteOptions {
  registry: NodeRegistry;
  resolveGroup?: GroupResolver;
  /** The MASTER_PORT a job submitted now would get on a node (free of other live jobs). */
  pickPort?: (node: string) => number;
}

export async function planRoutes(app: FastifyInstance, opts: PlanRouteOptions): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.post(
    '/v1/plan',
    { schema: { tags: ['plan'], summary: 'Plan a rank map over the ready nodes', body: PlacementSpec, response: { 200: RankMap, 400: ErrorBody } } },
    async (request) =>
      planRankMap(opts.registry.candidates(), request.body, {
        unavailable: (node) => opts.registry.unavailable(node),
        ...(opts.resolveGroup ? { resolveGroup: opts.resolveGroup } : {}),
        ...(opts.pickPort ? { pickPort: opts.pickPort } : {}),
      }),
  );
}
