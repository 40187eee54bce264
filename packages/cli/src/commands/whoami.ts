// `rankd whoami`: who the configured token belongs to, its role, and the controller it is for.
import type { Command } from 'commander';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { tableTime } from '../elapsed.js';

export function register(program: Command): void {
  program
    .command('whoami')
    .description('who the token belongs to: its user, role and Unix user, the token, and the controller')
    .option('--json', 'print what GET /v1/whoami answers')
    .action(async (opts: { json?: boolean }) => {
      const config = loadClientConfig();
      const me = await call(config, 'GET /v1/whoami');
      if (opts.json) return void process.stdout.write(JSON.stringify(me, null, 2) + '\n');
      const c = me.credential;
      const token = [
        c.kind === 'api-token' ? 'API token' : 'dashboard session',
        `created ${tableTime(c.createdAt)} UTC`,
        c.expiresAt === null ? 'no expiry (until revoked)' : `expires ${tableTime(c.expiresAt)} UTC`,
        ...(c.description ? [`"${c.description}"`] : []),
      ];
      process.stdout.write(
        [
          `user:       ${me.name}`,
          `role:       ${me.role}`,
          `unix user:  ${me.unixUser ?? '-'}`,
          `token:      ${me.accessor} (${token.join(', ')})`,
          `controller: ${config.url}`,
        ].join('\n') + '\n',
      );
    });
}
