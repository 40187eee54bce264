// A rankd cluster on namespace hosts (lib/netns.ts): the controller in its own network
// namespace and one real `rankd agent` in each host's, enrolled as `rankd join-command`
// tells them (one join token for all, by environment, never argv; the CA pinned with
// --ca-hash). Client commands run from the controller's namespace, as a user on the head
// node would. Shared by the figures that need several hosts (restart-hosts, netcheck,
// netcheck-preflight).
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { waitFor, type Daemon } from '../lib/child.js';
import type { BenchContext } from '../lib/figure.js';
import { createHostNetwork, type HostNetwork } from '../lib/netns.js';
import { rankdArgv } from '../lib/rankd.js';

/** The controller's port inside its namespace: each cluster has a network of its own. */
const PORT = 7480;

export interface NamespaceCluster {
  net: HostNetwork;
  /** The controller's data directory: rankd.db holds its history. */
  dataDir: string;
  /** For client commands: RANKD_URL, RANKD_TOKEN (the admin API token), RANKD_CA, RANKD_HOME. */
  clientEnv: NodeJS.ProcessEnv;
  controller: Daemon;
}

/** Every node ready and connected, or an error naming the logs; `label` names the figure in logs and the token. */
export async function startNamespaceCluster(
  ctx: BenchContext,
  opts: { hosts: number; label: string },
): Promise<NamespaceCluster> {
  const net = createHostNetwork(opts.hosts);
  try {
    const dir = ctx.tmpDir;
    const dataDir = path.join(dir, 'controller');
    mkdirSync(dataDir, { recursive: true });
    const listen = `${net.controller.address}:${PORT}`;
    const controller = net.startIn(
      net.controller,
      'rankd controller',
      rankdArgv(ctx.repoRoot, ['controller', '--listen', listen, '--data-dir', dataDir]),
      { logFile: path.join(dir, 'controller.log') },
    );
    let state: { ca?: string; caHash?: string } = {};
    const up = await waitFor(() => {
      if (controller.exited) return true;
      try {
        state = JSON.parse(readFileSync(path.join(dataDir, 'controller.json'), 'utf8')) as typeof state;
        return Boolean(state.ca && state.caHash);
      } catch {
        return false;
      }
    }, 30_000);
    if (!up || controller.exited) throw new Error(`the controller did not come up (see ${controller.logFile})`);
    const url = `https://${listen}`;
    const clientEnv = {
      RANKD_URL: url,
      RANKD_TOKEN: readFileSync(path.join(dataDir, 'api-token'), 'utf8').trim(),
      RANKD_CA: state.ca!,
      RANKD_HOME: path.join(dir, 'client-home'),
    };
    const rankd = (args: string[]) =>
      net.runIn(net.controller, rankdArgv(ctx.repoRoot, args), { env: clientEnv, timeoutMs: 30_000 });
    // `rankd join-token create --uses N`: one token for every agent, by environment (never argv)
    const minted = JSON.parse(
      await rankd(['join-token', 'create', '--uses', String(opts.hosts), '--description', opts.label, '--json']),
    ) as { token: string };
    for (const host of net.hosts) {
      const spool = path.join(dir, host.name, 'spool');
      mkdirSync(spool, { recursive: true });
      const args = ['agent', '--controller', url, '--ca-hash', state.caHash!, '--name', host.name];
      args.push('--state-dir', path.join(dir, host.name, 'state'), '--spool-dir', spool, '--config', '/dev/null');
      // ranks run as whoever runs the bench, root here, which the agent refuses unless told
      if (process.getuid?.() === 0) args.push('--allow-root');
      net.startIn(host, `rankd agent ${host.name}`, rankdArgv(ctx.repoRoot, args), {
        logFile: path.join(dir, `${host.name}.log`),
        env: { ...process.env, RANKD_JOIN_TOKEN: minted.token },
      });
    }
    let ready = 0;
    const allReady = await waitFor(
      async () => {
        const { nodes } = JSON.parse(await rankd(['nodes', '--json'])) as {
          nodes: Array<{ state: string; connected: boolean }>;
        };
        ready = nodes.filter((n) => n.state === 'ready' && n.connected).length;
        return ready === opts.hosts;
      },
      60_000,
      500,
    );
    if (!allReady) throw new Error(`only ${ready} of ${opts.hosts} agents became ready (logs in ${dir})`);
    ctx.log(`${opts.label}: controller at ${url} and ${opts.hosts} agents ready in ${net.cidr}`);
    return { net, dataDir, clientEnv, controller };
  } catch (err) {
    await net.teardown();
    throw err;
  }
}
