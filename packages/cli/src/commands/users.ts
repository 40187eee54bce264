// `rankd user add|list|remove` and `rankd token create|list|revoke`.
import type { Command } from 'commander';
import type { TokenCreated } from '@rankd/protocol';
import { DESCRIPTION_CHARS } from '@rankd/protocol/limits';
import { ROLES } from '@rankd/protocol/roles';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { printJson } from '../json-output.js';
import { textOf } from '../options.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { renderTable } from '../table.js';

export function register(program: Command): void {
  const user = program.command('user').description('users, their roles and Unix users (admin)');
  user
    .command('add')
    .description('add a user; prints its first API token, once')
    .argument('<name>')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`)
    .option('--unix-user <user>', 'the Unix user its jobs run as (role user: default its name)')
    .option('--json', 'print {"name","role","unixUser","token"}')
    .action(async (name: string, opts: { role: string; unixUser?: string; json?: boolean }) => {
      const role = ROLES.find((r) => r === opts.role);
      if (!role) throw new CliError(`--role ${opts.role}: one of ${ROLES.join(', ')}`, ExitCode.Usage);
      const created = await call(loadClientConfig(), 'POST /v1/users', {
        body: { name, role, ...(opts.unixUser ? { unixUser: opts.unixUser } : {}) },
      });
      printToken(
        created,
        opts.json,
        `user ${created.name} (${created.role}${created.unixUser ? `, Unix user ${created.unixUser}` : ''})`,
      );
    });
  user
    .command('list')
    .description('list the users')
    .option('--json', 'print the REST document of GET /v1/users: {"users": [...]}')
    .action(async (opts: { json?: boolean }) => {
      const list = await call(loadClientConfig(), 'GET /v1/users');
      if (opts.json) return printJson(list);
      const { users } = list;
      process.stdout.write(
        renderTable(
          ['NAME', 'ROLE', 'UNIX USER', 'TOKENS', 'CREATED'],
          users.map((u) => [
            u.name,
            u.role,
            u.unixUser ?? '-',
            String(u.tokens),
            u.createdAt.replace('T', ' ').slice(0, 19),
          ]),
        ),
      );
    });
  user
    .command('remove')
    .description('remove a user and revoke its tokens')
    .argument('<name>')
    .action(async (name: string) => {
      await call(loadClientConfig(), 'DELETE /v1/users/:name', { params: { name } });
      process.stderr.write(`rankd: user ${name} removed; its tokens are revoked\n`);
    });

  const token = program.command('token').description('API tokens: create (shown once), list (accessors only), revoke');
  token
    .command('create')
    .description('create an API token for yourself, or for another user (admin); prints it once')
    .option('--user <name>', 'whose token (admin)')
    .option(
      '--description <text>',
      `what it is for (at most ${DESCRIPTION_CHARS.max} characters)`,
      textOf(DESCRIPTION_CHARS),
    )
    .option('--json', 'print {"name","role","unixUser","accessor","token"}')
    .action(async (opts: { user?: string; description?: string; json?: boolean }) => {
      const created = await call(loadClientConfig(), 'POST /v1/tokens', {
        body: {
          ...(opts.user ? { user: opts.user } : {}),
          ...(opts.description ? { description: opts.description } : {}),
        },
      });
      printToken(created, opts.json, `token ${created.accessor} of ${created.name}`);
    });
  token
    .command('list')
    .description("your tokens (all users' for an admin): accessors, never secrets")
    .option('--user <name>', "one user's tokens (admin)")
    .option('--json', 'print the REST document of GET /v1/tokens: {"tokens": [...]}')
    .action(async (opts: { user?: string; json?: boolean }) => {
      const list = await call(loadClientConfig(), 'GET /v1/tokens', { query: { user: opts.user } });
      if (opts.json) return printJson(list);
      const { tokens } = list;
      process.stdout.write(
        renderTable(
          ['ACCESSOR', 'USER', 'CREATED', 'LAST USED', 'DESCRIPTION'],
          tokens.map((t) => [
            t.accessor,
            t.user,
            t.createdAt.replace('T', ' ').slice(0, 19),
            t.lastUsedAt?.replace('T', ' ').slice(0, 19) ?? '-',
            t.description || '-',
          ]),
        ),
      );
    });
  token
    .command('revoke')
    .description('revoke a token by its accessor; it fails from the next request on')
    .argument('<accessor>')
    .action(async (accessor: string) => {
      await call(loadClientConfig(), 'DELETE /v1/tokens/:accessor', { params: { accessor } });
      process.stderr.write(`rankd: token ${accessor} revoked\n`);
    });
}

function printToken(created: TokenCreated, json: boolean | undefined, what: string): void {
  if (json) {
    process.stdout.write(
      JSON.stringify({
        name: created.name,
        role: created.role,
        unixUser: created.unixUser,
        accessor: created.accessor,
        token: created.token,
      }) + '\n',
    );
    return;
  }
  process.stderr.write(`rankd: ${what}; accessor ${created.accessor}. The token follows; it is shown this once:\n`);
  process.stdout.write(created.token + '\n');
}
