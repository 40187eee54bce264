// Wires the controller together: store, registry, REST API and agent gateway on one port.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { CloseCode, DEFAULT_CONTROLLER_PORT } from '@rankd/protocol';
import { buildApi } from './api/server.js';
import { NodeRegistry } from './fleet/node-registry.js';
import { defaultFleetTiming, type FleetTiming } from './fleet/timing.js';
import { createFleetServices } from './fleet/exec/fleet-services.js';
import { AgentGateway } from './gateway/agent-gateway.js';
import { jobHandlers } from './gateway/job-handlers.js';
import { JobManager } from './jobs/job-manager.js';
import { LogStore } from './jobs/log-store.js';
import { RankEvents } from './jobs/rank-events.js';
import { JobsRepo } from './store/jobs-repo.js';
import { openDatabase, type Db } from './store/database.js';
import { EventsRepo } from './store/events-repo.js';
import { NodesRepo } from './store/nodes-repo.js';
import { loadOrCreateTokens, type Tokens } from './store/tokens.js';

export interface ControllerOptions {
  dataDir: string;
  /** Loopback unless told otherwise. */
  host?: string;
  /** 0 picks a free port; the chosen one is written to <dataDir>/controller.json. */
  port?: number;
  timing?: Partial<FleetTiming>;
  log?: Logger;
}

export interface RunningController {
  url: string;
  tokens: Tokens;
  registry: NodeRegistry;
  jobs: JobManager;
  gateway: AgentGateway;
  app: FastifyInstance;
  db: Db;
  log: Logger;
  close(): Promise<void>;
}

export const DEFAULT_PORT = DEFAULT_CONTROLLER_PORT;

export async function startController(options: ControllerOptions): Promise<RunningController> {
  const log = options.log ?? pino({ name: 'rankd-controller' });
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const tokens = loadOrCreateTokens(options.dataDir);
  const db = openDatabase(options.dataDir);
  const events = new EventsRepo(db);
  const timing = { ...defaultFleetTiming, ...options.timing };
  const registry = new NodeRegistry(new NodesRepo(db), events, timing, log);
  registry.load();
  const jobsRepo = new JobsRepo(db);
  const agents = { send: (node: string, message: { type: string } & Record<string, unknown>) => registry.link(node)?.send(message) ?? false };
  const fleet = createFleetServices({ db, registry, events, apiToken: tokens.api, log });
  const jobs = new JobManager(jobsRepo, events, new LogStore(join(options.dataDir, 'logs')), registry, agents, log, fleet.inventory.groupResolver());
  jobs.restore();
  const rankEvents = new RankEvents(jobs, agents, jobsRepo, log);

  const app = await buildApi({ log, apiToken: tokens.api, registry, jobs, fleet });
  const gateway = new AgentGateway(app.server, tokens.join, registry, log);
  for (const [type, handler] of jobHandlers(rankEvents)) gateway.handle(type, handler);
  fleet.attach(gateway);
  await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? DEFAULT_PORT });
  registry.start();

  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  writeAtomically(join(options.dataDir, 'controller.json'), JSON.stringify({ url, pid: process.pid }) + '\n');
  log.info({ url, dataDir: options.dataDir, timing }, 'controller listening');

  let closed: Promise<void> | null = null;
  const close = () =>
    (closed ??= (async () => {
      fleet.close();
      gateway.close(CloseCode.ShuttingDown, 'controller shutting down');
      rankEvents.close();
      registry.stop();
      await app.close();
      jobs.logs.closeAll();
      db.close();
    })());
  return { url, tokens, registry, jobs, gateway, app, db, log, close };
}

function writeAtomically(path: string, content: string): void {
  writeFileSync(path + '.tmp', content, { mode: 0o600 });
  renameSync(path + '.tmp', path);
}
