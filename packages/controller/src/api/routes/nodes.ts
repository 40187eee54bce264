// The node registry over REST.
import { ErrorBody, ErrorCode, Facts, NodeList, NodeParams, NodeView, RankdError } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { NodeRegistry } from '../../fleet/node-registry.js';

export async function nodesRoutes(app: FastifyInstance, opts: { registry: NodeRegistry }): Promise<void> {
  const { registry } = opts;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get('/v1/nodes', { schema: { tags: ['nodes'], summary: 'List the nodes', response: { 200: NodeList } } }, async () => ({
    nodes: registry.list(),
  }));

  api.get(
    '/v1/nodes/:name',
    { schema: { tags: ['nodes'], summary: 'One node', params: NodeParams, response: { 200: NodeView, 404: ErrorBody } } },
    async (request) => {
      const view = registry.list().find((n) => n.name === request.params.name);
      if (!view) throw new RankdError(ErrorCode.NodeNotFound, `unknown node "${request.params.name}"`);
      return view;
    },
  );

  api.get(
    '/v1/nodes/:name/facts',
    { schema: { tags: ['nodes'], summary: "A node's hardware facts", params: NodeParams, response: { 200: Facts, 404: ErrorBody } } },
    async (request) => {
      const node = registry.get(request.params.name);
      if (!node) throw new RankdError(ErrorCode.NodeNotFound, `unknown node "${request.params.name}"`);
      if (!node.facts) throw new RankdError(ErrorCode.NotFound, `node "${request.params.name}" has not reported facts yet`);
      return node.facts;
    },
  );
}
