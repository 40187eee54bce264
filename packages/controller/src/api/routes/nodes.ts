// The node registry over REST.
import { ErrorCode, RankdError, type NodeView } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import type { NodeRegistry } from '../../nodes/node-registry.js';
import { hardwareSummary } from '../../fleet/hardware-summary.js';
import { isTerminal, type JobManager } from '../../jobs/job-manager.js';
import { serveRoutes } from '../route-table.js';

export async function nodesRoutes(
  app: FastifyInstance,
  opts: { registry: NodeRegistry; jobs: JobManager },
): Promise<void> {
  const { registry, jobs } = opts;
  /** Running ranks per node, counted once per listing. */
  const ranksByNode = (): Map<string, number> => {
    const count = new Map<string, number>();
    for (const live of jobs.live.values())
      for (const r of live.ranks)
        if (r.state === 'running' && !isTerminal(r)) count.set(r.node, (count.get(r.node) ?? 0) + 1);
    return count;
  };
  const withUse = (view: NodeView, ranks: Map<string, number>): NodeView => {
    const facts = registry.get(view.name)?.facts;
    return { ...view, hardware: facts ? hardwareSummary(facts) : null, ranksRunning: ranks.get(view.name) ?? 0 };
  };

  // Draining is Slurm's `scontrol update nodename=N state=drain reason=R`: no new rank goes
  // to the node, running ranks finish. Resume undoes it. Both name their caller in the event.
  const found = (view: NodeView | null, name: string): NodeView => {
    if (!view) throw new RankdError(ErrorCode.NodeNotFound, `unknown node "${name}"`);
    return view;
  };

  serveRoutes(app, {
    'GET /v1/nodes': async () => {
      const ranks = ranksByNode();
      return { nodes: registry.list().map((v) => withUse(v, ranks)) };
    },
    'GET /v1/nodes/:name': async (request) => {
      const view = registry.list().find((n) => n.name === request.params.name);
      if (!view) throw new RankdError(ErrorCode.NodeNotFound, `unknown node "${request.params.name}"`);
      return withUse(view, ranksByNode());
    },
    'GET /v1/nodes/:name/facts': async (request) => {
      const node = registry.get(request.params.name);
      if (!node) throw new RankdError(ErrorCode.NodeNotFound, `unknown node "${request.params.name}"`);
      if (!node.facts)
        throw new RankdError(ErrorCode.NotFound, `node "${request.params.name}" has not reported facts yet`);
      return node.facts;
    },
    'POST /v1/nodes/:name/drain': async (request) => {
      const { name } = request.params;
      request.auditResource = { node: name };
      return found(registry.drain(name, request.body?.reason ?? 'drained', request.principal?.user ?? null), name);
    },
    'POST /v1/nodes/:name/resume': async (request) => {
      const { name } = request.params;
      request.auditResource = { node: name };
      return found(registry.resume(name, request.principal?.user ?? null), name);
    },
  });
}
