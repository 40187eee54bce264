// `rankd controller`: runs the controller in the foreground (systemd runs it so).
import type { Command } from 'commander';
import { join } from 'node:path';
import { DEFAULT_CONTROLLER_PORT as DEFAULT_PORT } from '@rankd/protocol/wire';
import { rankdHome } from '../client/config.js';
import { parseListen } from '../listen-address.js';
import { positiveInt } from '../options.js';
import { untilSignal } from '../signals.js';

export function register(program: Command): void {
  program
    .command('controller')
    .description('run the controller (REST API + agent gateway) in the foreground')
    .option('--listen <addr>', `address to listen on (loopback unless told otherwise)`, `127.0.0.1:${DEFAULT_PORT}`)
    .option('--data-dir <dir>', 'database, tokens and logs (default: ~/.rankd/controller)')
    .option('--heartbeat-ms <ms>', 'agent heartbeat interval; TTL, lost deadline and restart grace scale with it', positiveInt)
    .option('--restart-grace-ms <ms>', 'after a start, how long known nodes have to reconnect before any is judged', positiveInt)
    .action(async (opts: { listen: string; dataDir?: string; heartbeatMs?: number; restartGraceMs?: number }) => {
      const { host, port } = parseListen(opts.listen, DEFAULT_PORT);
      // loaded here, not at the top: other commands must not pay for fastify and SQLite
      const { fleetTimingFromHeartbeat, startController } = await import('@rankd/controller');
      const controller = await startController({
        dataDir: opts.dataDir ?? join(rankdHome(), 'controller'),
        host,
        port,
        timing: {
          ...(opts.heartbeatMs ? fleetTimingFromHeartbeat(opts.heartbeatMs) : {}),
          ...(opts.restartGraceMs ? { restartGraceMs: opts.restartGraceMs } : {}),
        },
      });
      const signal = await untilSignal();
      controller.log.info({ signal }, 'controller stopping');
      await controller.close();
    });
}
