// Wires the agent together: config, controller link, facts.
import { readFileSync, statSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { ErrorCode, RANKD_VERSION, RankdError, type Hello } from '@rankd/protocol';
import type { AgentConfig } from './config.js';
import { ControllerLink } from './link/controller-link.js';
import { enroll, loadIdentity, renew, renewalDelay, type NodeIdentity } from './link/enroll.js';
import { FactsPublisher, type FactsSource } from './link/facts-publisher.js';
import { JobExecutor } from './jobs/job-executor.js';
import { PmiServer } from './pmi/pmi-server.js';
import { FLEET_CAPABILITIES, attachFleet } from './fleet/fleet-handlers.js';
import { describeSupervisor } from './ranks/supervisor-binary.js';
import { RankRunner } from './ranks/rank-runner.js';
import type { RankUserPolicy } from './ranks/identity.js';
import { OpenMpiJobs } from './openmpi/openmpi-jobs.js';

export interface AgentOptions {
  config: AgentConfig;
  facts: FactsSource;
  log?: Logger;
}

export interface RunningAgent {
  link: ControllerLink;
  config: AgentConfig;
  log: Logger;
  /** Settles when the controller refuses this node for good (revoked, expired, another identity). */
  fatal: Promise<RankdError>;
  /** Stops the agent; a service agent's ranks keep running for the next agent to adopt, an ephemeral one's end. */
  stop(): Promise<void>;
}

/** What this agent can do; the controller adapts to it instead of versioning message names. */
export const AGENT_CAPABILITIES = ['facts', 'jobs', 'pmi1', ...FLEET_CAPABILITIES];

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const { config } = options;
  const log = options.log ?? pino({ name: 'rankd-agent' });
  let identity = await obtainIdentity(config, log);
  let renewing = false;
  let publisher: FactsPublisher | null = null;
  const link = new ControllerLink({
    controllerUrl: config.controller,
    tls: () => ({ ca: identity.ca, cert: identity.cert, key: identity.key }),
    renewing: () => renewing,
    log,
    backoff: { baseMs: Math.min(250, config.reconnectMaxMs), capMs: config.reconnectMaxMs },
    hello: (): Hello => {
      const facts = publisher?.forHello();
      return {
        type: 'hello',
        name: config.name,
        version: RANKD_VERSION,
        capabilities: AGENT_CAPABILITIES,
        labels: config.labels,
        ...(config.address ? { address: config.address } : {}),
        ...(facts ? { facts } : {}),
      };
    },
  });
  publisher = new FactsPublisher(options.facts, link, config.factsIntervalMs, log);
  const users = rankUsers(config);
  const runner = new RankRunner({
    spoolDir: config.spoolDir,
    allowRoot: users.allowRoot,
    ownUserOnly: users.ownUserOnly,
  });
  const executor = new JobExecutor(runner, link, baseRankEnv(), log, new PmiServer(link, log));
  // the supervisor that starts ranks here and its version, or why ranks will be refused
  const { supervisor } = runner;
  if (supervisor.problem)
    log.error({ supervisor: supervisor.path, problem: supervisor.problem }, describeSupervisor(supervisor));
  else log.info({ supervisor: supervisor.path, version: supervisor.version }, describeSupervisor(supervisor));
  if (process.env.RANKD_LAUNCHER)
    log.warn('RANKD_LAUNCHER is no longer read: every rank starts under the rank supervisor');
  const fleet = attachFleet(link, { users, ephemeral: config.ephemeral, log, launcher: supervisor });
  const openmpi = new OpenMpiJobs(runner, executor, link, config.name, baseRankEnv(), users, log);
  // ranks from before an agent restart are taken back before the controller hears from us
  await executor.adopt();
  const fatal = new Promise<RankdError>((resolve) => link.once('fatal', resolve));
  // renewal at about 2/3 of the certificate's life; a failure retries sooner, never later than expiry.
  // The controller revokes the renewed certificate; the live link stays up (it was verified
  // when it opened) and the next connection presents the new one (tls() above).
  let renewTimer: NodeJS.Timeout | null = null;
  const scheduleRenewal = (delayMs: number) => {
    renewTimer = setTimeout(
      () => {
        renewing = true;
        renew(identity, { controller: config.controller, stateDir: config.stateDir, log })
          .finally(() => (renewing = false))
          .then((next) => {
            identity = next;
            scheduleRenewal(renewalDelay(identity));
          })
          .catch((err: Error) => {
            const left = identity.notAfter - Date.now();
            log.error(
              { err: err.message, code: (err as RankdError).code, msLeft: left },
              'certificate renewal failed; retrying',
            );
            if (left > 0) scheduleRenewal(Math.max(1000, Math.min(60_000, left / 10)));
          });
      },
      Math.min(delayMs, 2 ** 31 - 1),
    );
    renewTimer.unref();
  };
  scheduleRenewal(renewalDelay(identity));
  link.start();
  publisher.start();
  log.info({ name: config.name, controller: config.controller }, 'agent started');
  return {
    link,
    config,
    log,
    fatal,
    async stop() {
      if (renewTimer) clearTimeout(renewTimer);
      publisher?.stop();
      // a service agent's ranks keep running (KillMode=process): the next agent adopts them.
      // An ephemeral agent has no next one, and its allocation or pod is ending
      if (config.ephemeral) await executor.endAll(EPHEMERAL_STOP_GRACE_MS);
      executor.close();
      openmpi.close();
      fleet.close();
      await link.stop();
    },
  };
}

/** How long an ephemeral agent's ranks get between SIGTERM and SIGKILL when it stops. */
const EPHEMERAL_STOP_GRACE_MS = 3000;

/**
 * Whom ranks run as. An ephemeral agent runs them as its own user, whoever started it:
 * root only when root started it, and never anyone else.
 */
function rankUsers(config: AgentConfig): RankUserPolicy {
  if (config.ephemeral) return { allowRoot: process.getuid?.() === 0, ownUserOnly: true };
  return { allowRoot: config.allowRoot, ownUserOnly: false };
}

/** What every rank starts from before the planner's and the job's variables. */
function baseRankEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin' };
  for (const key of ['LANG', 'LC_ALL', 'TZ']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return env;
}

/** The node certificate from the state directory, else a new one by enrollment (join token + pinned CA hash). */
async function obtainIdentity(config: AgentConfig, log: Logger): Promise<NodeIdentity> {
  const kept = loadIdentity(config.stateDir, config.name);
  if (kept && kept.notAfter > Date.now() + 1000) {
    log.info(
      {
        node: kept.name,
        serial: kept.serial,
        notAfter: new Date(kept.notAfter).toISOString(),
        stateDir: config.stateDir,
      },
      'node certificate loaded',
    );
    return kept;
  }
  const joinToken = config.joinToken ?? (config.tokenFile ? readToken(config.tokenFile, log) : null);
  if (!joinToken || !config.caHash) {
    if (kept)
      throw new RankdError(
        ErrorCode.NodeCertExpired,
        `the node certificate in ${config.stateDir} expired at ${new Date(kept.notAfter).toISOString()}: enroll again with a new join token (--join-token-file or RANKD_JOIN_TOKEN) and --ca-hash, as "rankd join-command" prints them`,
      );
    throw new RankdError(
      ErrorCode.NodeCertRequired,
      `node "${config.name}" is not enrolled (no certificate in ${config.stateDir}): pass a join token (--join-token-file or RANKD_JOIN_TOKEN) and --ca-hash, as "rankd join-command" prints them`,
    );
  }
  return enroll({
    controller: config.controller,
    joinToken,
    caHash: config.caHash,
    name: config.name,
    stateDir: config.stateDir,
    log,
  });
}

function readToken(path: string, log: Logger): string {
  try {
    const token = readFileSync(path, 'utf8').trim();
    if (!token) throw new Error('file is empty');
    // read anyway (the token is single-use and about to be spent), but say who else could have
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077)
      log.warn(
        { path, mode: mode.toString(8) },
        `the join token file ${path} is readable by other users (mode ${mode.toString(8)}): keep it 0600`,
      );
    return token;
  } catch (err) {
    throw new Error(`cannot read join token file ${path}: ${(err as Error).message}`, { cause: err });
  }
}
