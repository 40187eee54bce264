// GET /v1/events: a Server-Sent Events stream of what changed, so that a dashboard updates
// when something happens instead of polling.
//
// Each event names what changed (a node by name, a job by id, a stored net check by id),
// never its new state: the client reads that through the API, where every read is authorized as usual. Changes are
// gathered and sent at most every FLUSH_MS; a client that reads slowly gets the distinct
// names once it drains, so what a connection holds is bounded by the fleet, not by the
// rate of change. Callers who may read only their own jobs hear only of those. When the
// token, user or dashboard session behind the stream is revoked, a last `revoked` event
// ({"code","message"}) is sent and the stream ends (streams/open-streams.ts).
import type { FastifyInstance } from 'fastify';
import type { NodeRegistry } from '../../nodes/node-registry.js';
import type { JobManager } from '../../jobs/job-manager.js';
import type { CheckService } from '../../checks/check-service.js';
import type { AccessControl } from '../auth.js';
import { streamOwner } from '../../streams/open-streams.js';
import { endResponse } from '../end-response.js';
import { serveRoutes } from '../route-table.js';

const FLUSH_MS = 100;
const KEEPALIVE_MS = 15_000;

export async function eventsRoutes(
  app: FastifyInstance,
  opts: {
    registry: NodeRegistry;
    jobs: JobManager;
    access: AccessControl;
    checks?: Pick<CheckService, 'onNetCheck'> | undefined;
  },
): Promise<void> {
  const { registry, jobs, access } = opts;
  // a stored net check, by id: one listener for the controller's life, fanned out to the open streams
  const checkStreams = new Set<(id: string) => void>();
  opts.checks?.onNetCheck((result) => {
    for (const stream of checkStreams) stream(result.id);
  });
  // one listener per open dashboard: not a leak, so no warning past ten
  registry.setMaxListeners(0);
  serveRoutes(app, {
    'GET /v1/events': async (request, reply) => {
      const principal = request.principal!;
      const ownJobsOnly = access.ownerFilter(principal, 'jobs.read');
      const readsJobs = access.checkRoute(principal, 'GET', '/v1/jobs').refusal === null;
      const readsChecks = access.checkRoute(principal, 'GET', '/v1/checks').refusal === null;
      const nodes = new Set<string>();
      const jobIds = new Set<string>();
      const checkIds = new Set<string>();
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
      raw.write(': rankd events\n\n');
      let timer: NodeJS.Timeout | null = null;
      let blocked = false;
      let stopped = false;
      const flush = (): void => {
        timer = null;
        if (blocked || stopped) return;
        let text = '';
        for (const name of nodes) text += `event: node\ndata: ${JSON.stringify({ name })}\n\n`;
        for (const id of jobIds) text += `event: job\ndata: ${JSON.stringify({ id })}\n\n`;
        for (const id of checkIds) text += `event: check\ndata: ${JSON.stringify({ id, kind: 'net' })}\n\n`;
        nodes.clear();
        jobIds.clear();
        checkIds.clear();
        if (text && !raw.write(text)) {
          blocked = true;
          raw.once('drain', () => {
            blocked = false;
            schedule();
          });
        }
      };
      const schedule = (): void => {
        if (!timer && !blocked && !stopped && (nodes.size || jobIds.size || checkIds.size))
          timer = setTimeout(flush, FLUSH_MS);
      };
      const onNode = (name: string): void => {
        nodes.add(name);
        schedule();
      };
      const onJob = (id: string): void => {
        if (!readsJobs) return;
        if (ownJobsOnly !== undefined && access.deps.jobOwner(id) !== ownJobsOnly) return;
        jobIds.add(id);
        schedule();
      };
      const onState = ({ name }: { name: string }): void => onNode(name);
      const onCheck = (id: string): void => {
        if (!readsChecks) return;
        checkIds.add(id);
        schedule();
      };
      checkStreams.add(onCheck);
      registry.on('changed', onNode);
      registry.on('state', onState);
      jobs.on('changed', onJob);
      const keepalive = setInterval(() => blocked || raw.write(': keepalive\n\n'), KEEPALIVE_MS);
      const stop = (): void => {
        stopped = true;
        forget();
        clearInterval(keepalive);
        if (timer) clearTimeout(timer);
        registry.off('changed', onNode);
        registry.off('state', onState);
        jobs.off('changed', onJob);
        checkStreams.delete(onCheck);
      };
      const forget = access.deps.streams.add(streamOwner(principal, request.dashboardSession), (why) => {
        stop();
        endResponse(raw, `event: revoked\ndata: ${JSON.stringify(why)}\n\n`);
      });
      raw.on('close', stop);
    },
  });
}
