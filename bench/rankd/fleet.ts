// A rankd fleet on loopback for the figures that measure rankd itself: one
// `rankd controller --listen 127.0.0.1:0` and N `rankd agent` processes on this machine,
// each with its own name and spool. Everything is started here by pid and stopped by pid.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { startDaemon, waitFor, type Daemon } from '../lib/child.js';
import type { BenchContext } from '../lib/figure.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';
import { onTeardown } from '../lib/teardown.js';

export interface Fleet {
  url: string;
  /** Environment for client commands (`rankd run`, `rankd logs`): the controller and its API token. */
  clientEnv: NodeJS.ProcessEnv;
  controller: Daemon;
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

export async function startFleet(ctx: BenchContext, opts: { agents: number; prefix: string }): Promise<Fleet> {
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
    const controller = startDaemon('rankd controller', rankdArgv(ctx.repoRoot, ['controller', '--listen', '127.0.0.1:0', '--data-dir', dataDir]), {
      logFile: path.join(dir, 'controller.log'),
    });
    daemons.push(controller);
    let url = '';
    const up = await waitFor(() => {
      if (controller.exited) return true;
      try {
        url = (JSON.parse(readFileSync(path.join(dataDir, 'controller.json'), 'utf8')) as { url: string }).url;
        return Boolean(url);
      } catch {
        return false;
      }
    }, 30_000);
    if (!up || controller.exited) throw new Error(`the controller did not come up (see ${controller.logFile})`);
    const apiToken = readFileSync(path.join(dataDir, 'api-token'), 'utf8').trim();
    const clientEnv = { ...process.env, RANKD_URL: url, RANKD_TOKEN: apiToken, RANKD_HOME: path.join(dir, 'client-home') };

    const agentNames = Array.from({ length: opts.agents }, (_, i) => `${opts.prefix}-${String(i + 1).padStart(2, '0')}`);
    for (const name of agentNames) {
      const spool = path.join(dir, 'spool', name);
      mkdirSync(spool, { recursive: true });
      const args = ['agent', '--controller', url, '--token-file', path.join(dataDir, 'join-token'), '--name', name, '--config', '/dev/null', '--spool-dir', spool];
      // The bench runs as root on CI; ranks then run as root too, which the agent refuses unless told.
      if (process.getuid?.() === 0) args.push('--allow-root');
      daemons.push(startDaemon(`rankd agent ${name}`, rankdArgv(ctx.repoRoot, args), { logFile: path.join(dir, `${name}.log`) }));
    }
    ctx.log(`rankd fleet: controller pid ${controller.pid} at ${url}, ${opts.agents} agent(s) starting`);
    const wanted = new Set(agentNames);
    let ready = 0;
    const allReady = await waitFor(async () => {
      const dead = daemons.find((d) => d.exited);
      if (dead) throw new Error(`${dead.name} exited at start (see ${dead.logFile})`);
      try {
        const res = await fetch(`${url}/v1/nodes`, { headers: { authorization: `Bearer ${apiToken}` }, signal: AbortSignal.timeout(5000) });
        if (!res.ok) return false;
        const body = (await res.json()) as { nodes: NodeView[] };
        ready = body.nodes.filter((n) => wanted.has(n.name) && n.state === 'ready' && n.connected).length;
        return ready === opts.agents;
      } catch {
        return false;
      }
    }, 60_000 + 3_000 * opts.agents, 250);
    if (!allReady) throw new Error(`only ${ready} of ${opts.agents} agents became ready`);
    return { url, clientEnv, controller, agents: daemons.slice(1), agentNames, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
