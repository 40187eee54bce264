// Wires the agent together: config, controller link, facts.
import { readFileSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { RANKD_VERSION, type Hello } from '@rankd/protocol';
import type { AgentConfig } from './config.js';
import { ControllerLink } from './link/controller-link.js';
import { FactsPublisher, type FactsSource } from './link/facts-publisher.js';
import { JobExecutor } from './jobs/job-executor.js';
import { FLEET_CAPABILITIES, attachFleet } from './fleet/fleet-handlers.js';
import { RankRunner } from './ranks/rank-runner.js';

export interface AgentOptions {
  config: AgentConfig;
  facts: FactsSource;
  log?: Logger;
}

export interface RunningAgent {
  link: ControllerLink;
  config: AgentConfig;
  log: Logger;
  stop(): Promise<void>;
}

/** What this agent can do; the controller adapts to it instead of versioning message names. */
export const AGENT_CAPABILITIES = ['facts', 'jobs', ...FLEET_CAPABILITIES];

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const { config } = options;
  const log = options.log ?? pino({ name: 'rankd-agent' });
  const joinToken = readToken(config.tokenFile);
  let publisher: FactsPublisher | null = null;
  const link = new ControllerLink({
    controllerUrl: config.controller,
    joinToken,
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
  const runner = new RankRunner({ spoolDir: config.spoolDir, allowRoot: config.allowRoot });
  const executor = new JobExecutor(runner, link, baseRankEnv(), log);
  const fleet = attachFleet(link, { allowRoot: config.allowRoot, log });
  // ranks from before an agent restart are taken back before the controller hears from us
  await executor.adopt();
  link.start();
  publisher.start();
  log.info({ name: config.name, controller: config.controller }, 'agent started');
  return {
    link,
    config,
    log,
    async stop() {
      publisher?.stop();
      // ranks keep running (KillMode=process): the next agent adopts them
      executor.close();
      fleet.close();
      await link.stop();
    },
  };
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

function readToken(path: string): string {
  try {
    const token = readFileSync(path, 'utf8').trim();
    if (!token) throw new Error('file is empty');
    return token;
  } catch (err) {
    throw new Error(`cannot read join token file ${path}: ${(err as Error).message}`);
  }
}
