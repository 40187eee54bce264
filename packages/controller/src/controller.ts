// Wires the controller together: store, registry, REST API and agent gateway on one port.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { isIP, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { deriveJoinMaterial } from '@rankd/protocol/join-secret';
import { pino, type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import {
  CloseCode,
  DEFAULT_CONTROLLER_PORT,
  ErrorCode,
  STDIN_PATH,
  type ControllerMessage,
  type CpuDefault,
} from '@rankd/protocol';
import { buildApi } from './api/server.js';
import { NodeRegistry } from './nodes/node-registry.js';
import { defaultFleetTiming, type FleetTiming } from './nodes/timing.js';
import { createFleetServices } from './fleet/exec/fleet-services.js';
import { AllreduceCheck } from './checks/allreduce-check.js';
import { CheckService } from './checks/check-service.js';
import { ChecksRepo } from './checks/checks-repo.js';
import { AgentGateway } from './gateway/agent-gateway.js';
import type { Around } from './gateway/agent-handlers.js';
import { AgentRefusals } from './gateway/agent-refusal.js';
import { jobHandlers } from './jobs/job-handlers.js';
import { pmiHandlers } from './jobs/pmi-handlers.js';
import { FenceExchange } from './pmi/fence-exchange.js';
import { JobManager } from './jobs/job-manager.js';
import { PREFLIGHT_DURATION_S } from './jobs/preflight.js';
import { OpenMpiLaunch } from './openmpi/openmpi-launch.js';
import { OpenMpiMode } from './openmpi/openmpi-mode.js';
import { LogStore } from './jobs/log-store.js';
import { RankEvents } from './jobs/rank-events.js';
import { StdinRelay } from './jobs/stdin-relay.js';
import { JobsRepo } from './jobs/jobs-repo.js';
import { openDatabase, type Db } from './store/database.js';
import { secureDataDir } from './store/data-dir.js';
import { lockDataDir, type DataDirLock } from './store/data-dir-lock.js';
import { EventsRepo } from './store/events-repo.js';
import { WriteBatch } from './store/write-batch.js';
import { NodesRepo } from './store/nodes-repo.js';
import { loadOrCreateTokens, type Tokens } from './store/tokens.js';
import { DEFAULT_NODE_CERT_TTL_MS, Enrollment } from './tls/enrollment.js';
import { answerPlaintext, httpsOptions, setupTls, type TlsMaterial, type TlsOptions } from './tls/tls-setup.js';
import { UsersRepo } from './store/users-repo.js';
import { SessionsRepo } from './store/sessions-repo.js';
import { AuditLog, type AuditOptions } from './store/audit-log.js';
import type { RefusalEvent } from './store/audit-refusals.js';
import {
  ConnectionGuard,
  DEFAULT_CONNECTION_LIMITS,
  serverTimeouts,
  type ConnectionLimits,
} from './tls/connection-guard.js';
import { AccessControl } from './api/auth.js';
import { OpenStreams } from './streams/open-streams.js';
import { ControllerMetrics } from './metrics/controller-metrics.js';
import { registerLinkGauges } from './metrics/link-gauges.js';
import { AutoDrain, DEFAULT_EXCLUDE_AFTER } from './nodes/auto-drain.js';
import type { UserLimits } from './schedule/limits.js';

export interface ControllerOptions {
  dataDir: string;
  /** Loopback unless told otherwise. */
  host?: string;
  /** 0 picks a free port; the chosen one is written to <dataDir>/controller.json. */
  port?: number;
  timing?: Partial<FleetTiming>;
  log?: Logger;
  /** Log to stderr instead of stdout (the default log only), leaving stdout to a caller's protocol. */
  logToStderr?: boolean;
  /** An organisation's own serving certificate; default: the controller's own CA issues one. */
  tls?: TlsOptions;
  /** Lifetime of issued node certificates (agents renew at about 2/3 of it). */
  nodeCertTtlMs?: number;
  /** The name of the admin created at first start (default "admin"); its token is the api-token file's. */
  bootstrapAdmin?: string;
  /** Per-user limits on running jobs and cores; over one, a job waits in the queue. */
  limits?: UserLimits;
  /** CPUs per rank for jobs without -c: `share` (each node divided among its ranks, the default) or N cores. */
  defaultCpusPerRank?: CpuDefault;
  /** What a connection without a node certificate may hold, and for how long (tls/connection-guard.ts). */
  connections?: Partial<ConnectionLimits>;
  /** The audit log's retention and file rotation. */
  audit?: AuditOptions;
  /** A node that failed this many attempts (of any jobs) within an hour is drained (default 2; 0: never). */
  excludeAfter?: number;
  /** The host in the URL the controller writes and prints (default: the listen address). */
  advertise?: string;
  /**
   * An instance's join secret (rankd up --slurm, --pods): the CA key is derived from it, and
   * so is one join token, registered for `uses` enrollments within `ttlMs`.
   */
  joinSecret?: { secret: string; uses: number; ttlMs: number };
  /** Told when a stale lock (a controller that died) was taken over; default: a warning in the log. */
  onStaleLock?: (notice: string) => void;
}

export interface RunningController {
  url: string;
  tokens: Tokens;
  tls: TlsMaterial;
  enrollment: Enrollment;
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
  const log = options.log ?? pino({ name: 'rankd-controller' }, options.logToStderr ? pino.destination(2) : undefined);
  // the lock comes before anything in the directory is opened: a second controller touches nothing
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(options.dataDir);
  if (lock.tookOver) {
    const notice = `took over the stale lock ${lock.path} (${lock.tookOver.why})`;
    if (options.onStaleLock) options.onStaleLock(notice);
    log.warn({ lock: lock.path, previous: lock.tookOver.holder }, notice);
  }
  try {
    return await startLocked(options, log, lock);
  } catch (err) {
    lock.release();
    throw err;
  }
}

async function startLocked(options: ControllerOptions, log: Logger, lock: DataDirLock): Promise<RunningController> {
  const tightened = secureDataDir(options.dataDir);
  if (tightened.length > 0)
    log.warn({ paths: tightened }, 'data directory: modes tightened to 0700 (directories) and 0600 (files)');
  const tokens = loadOrCreateTokens(options.dataDir);
  const host = options.host ?? '127.0.0.1';
  const joinMaterial = options.joinSecret ? deriveJoinMaterial(options.joinSecret.secret) : null;
  const tls = await setupTls(options.dataDir, host, {
    ...options.tls,
    ...(joinMaterial ? { derivedCa: { keyPem: joinMaterial.caKeyPem, caHash: joinMaterial.caHash } } : {}),
    ...(options.advertise ? { advertised: options.advertise } : {}),
  });
  const db = openDatabase(options.dataDir);
  const enrollment = new Enrollment(db, tls.ca, options.nodeCertTtlMs ?? DEFAULT_NODE_CERT_TTL_MS);
  if (joinMaterial && options.joinSecret) {
    const { uses, ttlMs } = options.joinSecret;
    if (
      enrollment.registerJoinToken(joinMaterial.joinToken, {
        uses,
        ttlMs,
        description: "the instance's join secret",
        rejoin: true,
      })
    )
      log.info({ uses, ttlMs }, "the join secret's token now allows these uses and this ttl (from its first start)");
  }
  const events = new EventsRepo(db);
  const timing = { ...defaultFleetTiming, ...options.timing };
  const registry = new NodeRegistry(new NodesRepo(db), events, timing, log);
  registry.load();
  const users = new UsersRepo(db);
  bootstrapAdmin(users, tokens.api, options.bootstrapAdmin ?? 'admin', log);
  const jobsRepo = new JobsRepo(db);
  // What agents report is written in one transaction per event-loop turn, and what the
  // controller tells agents waits for that commit (store/write-batch.ts).
  const batch = new WriteBatch(db, log);
  const agents = {
    send: (node: string, message: ControllerMessage) => {
      const link = registry.link(node);
      if (!link) return false;
      batch.afterCommit(() => link.send(message));
      return true;
    },
  };
  const audit = new AuditLog(db, options.dataDir, log, options.audit);
  const connections = { ...DEFAULT_CONNECTION_LIMITS, ...options.connections };
  let jobs: JobManager | undefined;
  // revocation is a push: what a token, a user or a session holds open ends with it
  const streams = new OpenStreams(log);
  users.on('tokenRevoked', (accessor) => streams.revokeToken(accessor));
  users.on('userRemoved', (name) => streams.removeUser(name));
  const access = new AccessControl({ users, audit, jobOwner: (id) => jobs?.owner(id), streams });
  const fleet = createFleetServices({ db, registry, events, access, log });
  const checksRepo = new ChecksRepo(db);
  const checks = new CheckService({
    inventory: fleet.inventory,
    registry,
    requests: fleet.requests,
    repo: checksRepo,
    events,
    log,
  });
  const openmpi = new OpenMpiMode(agents, events, (node) => Boolean(registry.link(node)));
  const logs = new LogStore(join(options.dataDir, 'logs'));
  jobs = new JobManager(
    jobsRepo,
    events,
    logs,
    registry,
    agents,
    openmpi,
    log,
    fleet.inventory.groupResolver(),
    options.limits,
    options.defaultCpusPerRank,
  );
  jobs.usePreflight({
    run: (nodes, threshold) =>
      checks.runNet({ duration: PREFLIGHT_DURATION_S, threshold }, { by: null, nodes, maxRounds: 1, recheck: true }),
  });
  jobs.restore();
  const refusals = new AgentRefusals(audit, agents, registry, log);
  const rankEvents = new RankEvents(jobs, agents, jobsRepo, refusals, log);
  const metrics = new ControllerMetrics(registry, jobs);
  registerLinkGauges(metrics.registry, checks);
  const fences = new FenceExchange(
    {
      nodes: (jobId) => jobs.lifecycle.pmiNodes(jobId),
      fail: (jobId, reason) => jobs.lifecycle.fail(jobId, reason),
      foreign: (node, jobId, type) =>
        refusals.refuse(node, {
          type,
          code: ErrorCode.ForeignJob,
          message: `${node} has no rank of job ${jobId}`,
          resource: { job: jobId },
        }),
    },
    { sendEncoded: (node, frame) => registry.link(node)?.sendEncoded(frame) ?? false },
    log,
    (seconds) => metrics.fence(seconds),
  );
  jobs.on('attemptEnded', (attemptId) => fences.endJob(attemptId));
  const excludeAfter = options.excludeAfter ?? DEFAULT_EXCLUDE_AFTER;
  if (excludeAfter > 0) {
    const autoDrain = new AutoDrain(excludeAfter, {
      failuresSince: (node, since) => jobsRepo.attempts.failuresSince(node, since),
      lastResumed: (node) => events.lastAt(node, 'node.resumed'),
      registry,
      audit,
      log,
      drained: () => metrics.autoDrained(),
    });
    jobs.on('nodesFailed', (failures) => autoDrain.nodesFailed(failures));
  }

  let gateway: AgentGateway | null = null;
  const app = await buildApi({
    log,
    access,
    users,
    sessions: new SessionsRepo(db),
    audit,
    registry,
    jobs,
    fleet,
    checks,
    allreduce: new AllreduceCheck({ jobs, repo: checksRepo, events, log }),
    https: { ...httpsOptions(tls), ...serverTimeouts(connections) },
    timeouts: connections,
    metrics,
    flushWrites: () => batch.flush(),
    enroll: {
      enrollment,
      trustPem: tls.trustPem,
      caHash: tls.caHash,
      clusterCaPem: tls.ca.certPem,
      dropNode: (node, reason) => gateway?.dropNode(node, reason) ?? 0,
    },
  });
  const countRefusal = (event: RefusalEvent) => audit.countRefusal(event);
  answerPlaintext(app.server, log, countRefusal);
  new ConnectionGuard(app.server as unknown as import('node:https').Server, connections, (source) =>
    audit.countRefusal({
      source,
      user: null,
      method: 'CONNECT',
      route: '(connection)',
      status: null,
      code: ErrorCode.TooManyConnections,
      reason: `more than ${connections.perSource} connections without a node certificate from one address`,
    }),
  );
  const gw = (gateway = new AgentGateway(app.server, enrollment, registry, log, countRefusal, (node, seconds) =>
    metrics.agentLinkRtt(node, seconds),
  ));
  const batched: Around = (work) => batch.within(work);
  gw.handle(jobHandlers(rankEvents), batched);
  gw.handle(pmiHandlers(fences, jobs, refusals), batched);
  fleet.attach(gw);
  const stdin = new StdinRelay(jobs, registry, access, log);
  gw.handle(stdin.handlers());
  gw.route(STDIN_PATH, stdin.upgrade);
  const ompiLaunch = new OpenMpiLaunch(jobs.lifecycle, openmpi, agents, registry, events, refusals, log);
  gw.handle(ompiLaunch.handlers(), batched);
  await app.listen({ host, port: options.port ?? DEFAULT_PORT });
  registry.start();

  const address = app.server.address() as AddressInfo;
  const advertised = options.advertise ?? address.address;
  const shown = isIP(advertised) === 6 ? `[${advertised}]` : advertised;
  const url = `https://${shown}:${address.port}`;
  const caFile = join(options.dataDir, 'ca-bundle.crt');
  writeAtomically(caFile, tls.trustPem);
  writeAtomically(
    join(options.dataDir, 'controller.json'),
    JSON.stringify({ url, pid: process.pid, ca: caFile, caHash: tls.caHash }) + '\n',
  );
  log.info(
    {
      url,
      dataDir: options.dataDir,
      timing,
      caHash: tls.caHash,
      defaultCpusPerRank: options.defaultCpusPerRank ?? 'share',
      excludeAfter,
    },
    'controller listening (TLS)',
  );

  let closed: Promise<void> | null = null;
  const close = () =>
    (closed ??= (async () => {
      fleet.close();
      stdin.close();
      gw.close(CloseCode.ShuttingDown, 'controller shutting down');
      rankEvents.close();
      registry.stop();
      await app.close();
      jobs.logs.closeAll();
      audit.close();
      batch.flush();
      db.close();
      lock.release();
    })());
  return { url, tokens, tls, enrollment, registry, jobs, gateway: gw, app, db, log, close };
}

/**
 * At first start (no users yet) the controller creates an admin whose token is the one in
 * <data dir>/api-token: `rankd up`, existing clients and scripts that read that file keep
 * working, and an existing data directory's token becomes the admin's.
 */
function bootstrapAdmin(users: UsersRepo, apiToken: string, name: string, log: Logger): void {
  if (users.count() > 0) return;
  const unixUser = name === 'admin' ? null : name;
  const { accessor } = users.add(
    { name, role: 'admin', unixUser, createdAt: Date.now() },
    apiToken,
    'bootstrap token (the api-token file)',
  );
  log.info({ user: name, accessor }, 'created the first admin; its token is the api-token file');
}

function writeAtomically(path: string, content: string): void {
  writeFileSync(path + '.tmp', content, { mode: 0o600 });
  renameSync(path + '.tmp', path);
}
