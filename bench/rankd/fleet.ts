// A rankd fleet on loopback for the figures that measure rankd itself: one
// `rankd controller --listen 127.0.0.1:0` and N `rankd agent` processes on this machine,
// each with its own name, spool and state directory. Everything is started here by pid and
// stopped by pid.
//
// The controller speaks HTTPS only, with its own CA (controller.json names the CA file and
// its pin). Agents enroll as `rankd join-command` tells them to: a join token minted over
// the REST API with the API token (one use per agent) and the CA's hash pinned with
// --ca-hash; they then connect with their node certificates (mTLS). The bench's REST calls
// verify the controller against that CA.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { startDaemon, waitFor, type Daemon } from '../lib/child.js';
import type { BenchContext } from '../lib/figure.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';
import { onTeardown } from '../lib/teardown.js';
import { restJson } from './https.js';

export interface Fleet {
  /** https://127.0.0.1:PORT */
  url: string;
  /** The CA the controller's certificate chains to (PEM), its file, and its pin (sha256:HEX). */
  ca: string;
  caFile: string;
  caHash: string;
  /** The admin API token (REST). */
  apiToken: string;
  /** The controller's data directory: rankd.db holds its history (the events table). */
  dataDir: string;
  /** Environment for client commands (`rankd run`, `rankd logs`): the controller, its API token and its CA. */
  clientEnv: NodeJS.ProcessEnv;
  /** The controller now running: restartController() replaces it. */
  readonly controller: Daemon;
  /**
   * SIGKILLs the controller (by pid) and starts a new one on the same address and data
   * directory, as systemd would after a crash. Resolves once the new one has spawned, with
   * the time it was spawned (performance.timeOrigin + performance.now()).
   */
  restartController(): Promise<number>;
  /** Mints a join token over the REST API (POST /v1/join-tokens) that `uses` nodes may enroll with. */
  mintJoinToken(uses: number, description: string): Promise<string>;
  agents: Daemon[];
  agentNames: string[];
  stop(): Promise<void>;
}

interface NodeView {
  name: string;
  state: string;
  connected: boolean;
}

/** null when the commands a fleet needs exist, else the reason to report. */
export async function whyNoFleet(ctx: BenchContext): Promise<string | null> {
  for (const command of ['controller', 'agent']) {
    const missing = await missingCommand(ctx.repoRoot, command);
    if (missing) return missing;
  }
  return null;
}

export async function startFleet(
  ctx: BenchContext,
  /**
   * controllerEnv: the controller's environment (NODE_OPTIONS for a profile), at every start; the bench's own by
   * default. controllerArgs: more flags for `rankd controller` (--heartbeat-ms), at every start.
   */
  opts: { agents: number; prefix: string; controllerEnv?: NodeJS.ProcessEnv; controllerArgs?: readonly string[] },
): Promise<Fleet> {
  const dir = path.join(ctx.tmpDir, `fleet-${opts.prefix}`);
  const dataDir = path.join(dir, 'controller');
  mkdirSync(dataDir, { recursive: true });
  const daemons: Daemon[] = [];
  const stop = onTeardown(`rankd fleet ${opts.prefix}`, async () => {
    // Agents first, so none of them spends the shutdown reconnecting to a controller that is gone.
    await Promise.all(daemons.slice(1).map((d) => d.stop()));
    await daemons[0]?.stop();
  });
  try {
    const spawnController = (listen: string): Daemon => {
      // every simulated node connects from 127.0.0.1, where a real fleet has an address each:
      // the per-address cap on connections still in their handshake would stand for 2,000 hosts
      const controller = startDaemon(
        'rankd controller',
        [
          ...rankdArgv(ctx.repoRoot, [
            'controller',
            '--listen',
            listen,
            '--data-dir',
            dataDir,
            '--max-conns-per-source',
            '100000',
            ...(opts.controllerArgs ?? []),
          ]),
        ],
        {
          logFile: path.join(dir, 'controller.log'),
          ...(opts.controllerEnv ? { env: opts.controllerEnv } : {}),
        },
      );
      daemons[0] = controller;
      return controller;
    };
    const controller = spawnController('127.0.0.1:0');
    let state: { url?: string; ca?: string; caHash?: string } = {};
    const up = await waitFor(() => {
      if (controller.exited) return true;
      try {
        state = JSON.parse(readFileSync(path.join(dataDir, 'controller.json'), 'utf8')) as typeof state;
        return Boolean(state.url && state.ca && state.caHash);
      } catch {
        return false;
      }
    }, 30_000);
    if (!up || controller.exited) throw new Error(`the controller did not come up (see ${controller.logFile})`);
    const { url, ca: caFile, caHash } = state as { url: string; ca: string; caHash: string };
    if (!url.startsWith('https://'))
      throw new Error(`the controller's controller.json names ${url}, not an https:// URL`);
    const ca = readFileSync(caFile, 'utf8');
    const apiToken = readFileSync(path.join(dataDir, 'api-token'), 'utf8').trim();
    const clientEnv = {
      ...process.env,
      RANKD_URL: url,
      RANKD_TOKEN: apiToken,
      RANKD_CA: caFile,
      RANKD_HOME: path.join(dir, 'client-home'),
    };
    const rest = { url, ca, apiToken };
    const mintJoinToken = async (uses: number, description: string): Promise<string> => {
      const minted = await restJson<{ token: string }>(
        rest,
        'POST',
        '/v1/join-tokens',
        { ttlSeconds: 86_400, uses, description: description.slice(0, 200) },
        30_000,
      );
      return minted.token;
    };

    const agentNames = Array.from(
      { length: opts.agents },
      (_, i) => `${opts.prefix}-${String(i + 1).padStart(2, '0')}`,
    );
    // One token for the whole fleet, one use per agent: what `rankd join-command --uses N` prints.
    const joinToken = opts.agents > 0 ? await mintJoinToken(opts.agents, `bench fleet ${opts.prefix}`) : '';
    for (const name of agentNames) {
      const spool = path.join(dir, 'spool', name);
      const stateDir = path.join(dir, 'state', name);
      mkdirSync(spool, { recursive: true });
      const args = [
        'agent',
        '--controller',
        url,
        '--ca-hash',
        caHash,
        '--state-dir',
        stateDir,
        '--name',
        name,
        '--config',
        '/dev/null',
        '--spool-dir',
        spool,
      ];
      // The bench runs as root on CI; ranks then run as root too, which the agent refuses unless told.
      if (process.getuid?.() === 0) args.push('--allow-root');
      // the token by environment, as agents take it: never in argv (docs/security.md)
      daemons.push(
        startDaemon(`rankd agent ${name}`, rankdArgv(ctx.repoRoot, args), {
          logFile: path.join(dir, `${name}.log`),
          env: { ...process.env, RANKD_JOIN_TOKEN: joinToken },
        }),
      );
    }
    ctx.log(`rankd fleet: controller pid ${controller.pid} at ${url}, ${opts.agents} agent(s) starting`);
    const wanted = new Set(agentNames);
    let ready = 0;
    const allReady = await waitFor(
      async () => {
        const dead = daemons.find((d) => d.exited);
        if (dead) throw new Error(`${dead.name} exited at start (see ${dead.logFile})`);
        try {
          const body = await restJson<{ nodes: NodeView[] }>(rest, 'GET', '/v1/nodes', undefined, 5000);
          ready = body.nodes.filter((n) => wanted.has(n.name) && n.state === 'ready' && n.connected).length;
          return ready === opts.agents;
        } catch {
          return false;
        }
      },
      60_000 + 3_000 * opts.agents,
      250,
    );
    if (!allReady) throw new Error(`only ${ready} of ${opts.agents} agents became ready`);
    const restartController = async (): Promise<number> => {
      const old = daemons[0]!;
      const gone = new Promise<void>((resolve) => (old.exited ? resolve() : old.child.once('exit', () => resolve())));
      process.kill(old.pid, 'SIGKILL');
      await gone;
      const spawnedAt = performance.timeOrigin + performance.now();
      spawnController(new URL(url).host);
      return spawnedAt;
    };
    return {
      url,
      ca,
      caFile,
      caHash,
      apiToken,
      dataDir,
      clientEnv,
      get controller() {
        return daemons[0]!;
      },
      restartController,
      mintJoinToken,
      agents: daemons.slice(1),
      agentNames,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The last error the controller logged (pino JSON lines): what a client only sees as a 500. */
export function lastControllerError(fleet: Fleet): string | null {
  let text: string;
  try {
    text = readFileSync(fleet.controller.logFile, 'utf8');
  } catch {
    return null;
  }
  const lines = text.trim().split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const entry = JSON.parse(lines[i]!) as { level?: number; msg?: string; err?: { message?: string } };
      if ((entry.level ?? 0) >= 50) return entry.err?.message ?? entry.msg ?? null;
    } catch {
      // not a JSON line
    }
  }
  return null;
}
