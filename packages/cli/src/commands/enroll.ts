// Enrollment commands (admin, with the API token):
//   rankd join-command [--ttl 24h] [--uses N] [--controller URL] [--token-file PATH]
//                                                                   a join token, as the lines that enroll an agent
//   rankd join-token list|create|revoke ID                          join tokens (ids and state, never secrets)
// (`rankd node remove`, which revokes a node's certificates, is with the node commands in nodes.ts.)
import type { Command } from 'commander';
import { DESCRIPTION_CHARS, JOIN_TOKEN_TTL_SECONDS, JOIN_TOKEN_USES } from '@rankd/protocol/limits';
import { httpsUrl, loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import type { JoinTokenMinted } from '@rankd/protocol';
import { CliError, ExitCode } from '../exit-codes.js';
import { integerIn, secondsIn, textOf } from '../options.js';
import { printJson } from '../json-output.js';
import { renderTable } from '../table.js';
import { plural } from '@rankd/protocol/plural';

/** What POST /v1/join-tokens answers. */
type Minted = JoinTokenMinted;

interface MintFlags {
  tokenFile?: string;
  /** Seconds. */
  ttl?: number;
  uses?: number;
  description?: string;
  controller?: string;
  json?: boolean;
}

async function mint(flags: MintFlags): Promise<{ minted: Minted; controller: string }> {
  const config = loadClientConfig();
  // agents refuse anything but https:// too: no token is minted for a line they would refuse
  const controller = flags.controller ? httpsUrl(flags.controller, '--controller') : config.url;
  const minted = await call(config, 'POST /v1/join-tokens', {
    body: {
      ...(flags.ttl ? { ttlSeconds: Math.round(flags.ttl) } : {}),
      ...(flags.uses ? { uses: flags.uses } : {}),
      ...(flags.description ? { description: flags.description } : {}),
    },
  });
  return { minted, controller };
}

function mintOptions(command: Command): Command {
  return command
    .option(
      '--ttl <duration>',
      'how long the token is valid (default 24h, at most 365d)',
      secondsIn(JOIN_TOKEN_TTL_SECONDS),
    )
    .option(
      '--uses <n>',
      `how many nodes may enroll with it (default 1: single-use, at most ${JOIN_TOKEN_USES.max})`,
      integerIn(JOIN_TOKEN_USES),
    )
    .option(
      '--description <text>',
      `a note kept with the token (at most ${DESCRIPTION_CHARS.max} characters)`,
      textOf(DESCRIPTION_CHARS),
    )
    .option('--controller <url>', 'the controller URL agents dial (default: the one in the client config)')
    .option('--json', 'print JSON');
}

/** Where join-command tells the node to keep the token: what deploy/install.sh writes too. */
export const DEFAULT_JOIN_TOKEN_FILE = '/etc/rankd/token';

/**
 * The lines that enroll a node, with the token in a file of mode 0600 and never in a
 * command line (which every user of the node can read in ps): the shell's own printf
 * writes it, inside a subshell whose umask makes the file 0600 from its creation. Every
 * value is single-quoted: the lines are pasted into a root shell.
 */
export function joinLines(
  minted: Minted,
  controller: string,
  tokenFile: string,
): { writeToken: string; command: string } {
  const quoted = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const dir = tokenFile.slice(0, Math.max(1, tokenFile.lastIndexOf('/')));
  return {
    writeToken: `(umask 077 && mkdir -p ${quoted(dir)} && printf '%s\\n' ${quoted(minted.token)} > ${quoted(tokenFile)})`,
    command: `rankd agent --controller ${quoted(controller)} --join-token-file ${quoted(tokenFile)} --ca-hash ${minted.caHash}`,
  };
}

export function register(program: Command): void {
  mintOptions(
    program
      .command('join-command')
      .description(
        'mint a join token and print the lines that enroll an agent with it (the token goes to a 0600 file, never on a command line)',
      ),
  )
    .option('--token-file <path>', `where the node keeps the token (default ${DEFAULT_JOIN_TOKEN_FILE})`)
    .action(async (flags: MintFlags) => {
      const tokenFile = flags.tokenFile ?? DEFAULT_JOIN_TOKEN_FILE;
      if (!tokenFile.startsWith('/'))
        throw new CliError(`--token-file must be an absolute path (got "${tokenFile}")`, ExitCode.Usage);
      const { minted, controller } = await mint(flags);
      const lines = joinLines(minted, controller, tokenFile);
      if (flags.json)
        process.stdout.write(JSON.stringify({ ...minted, controller, tokenFile, ...lines }, null, 2) + '\n');
      else
        process.stdout.write(
          `# on the node, as root: the token goes to a file only root can read, then the agent reads it from there\n${lines.writeToken}\n${lines.command}\n`,
        );
      process.stderr.write(
        `rankd: join token ${minted.id} expires ${minted.expiresAt}, ${plural(minted.maxUses, 'use')}\n`,
      );
    });

  const tokens = program.command('join-token').description('list, create or revoke join tokens');
  mintOptions(tokens.command('create').description('mint a join token (printed once)')).action(
    async (flags: MintFlags) => {
      const { minted, controller } = await mint(flags);
      if (flags.json) process.stdout.write(JSON.stringify({ ...minted, controller }, null, 2) + '\n');
      else process.stdout.write(`${minted.token}\n`);
    },
  );
  tokens
    .command('list')
    .description('join tokens: id, state, uses, expiry (never the secrets)')
    .option('--json', 'print the REST document of GET /v1/join-tokens: {"tokens": [...]}')
    .action(async (flags: { json?: boolean }) => {
      const answer = await call(loadClientConfig(), 'GET /v1/join-tokens');
      const list = answer.tokens;
      if (flags.json) printJson(answer);
      else
        process.stdout.write(
          renderTable(
            ['ID', 'STATE', 'USES', 'EXPIRES', 'DESCRIPTION'],
            list.map((t) => [t.id, t.state, `${t.uses}/${t.maxUses}`, t.expiresAt, t.description || '-']),
          ),
        );
    });
  tokens
    .command('revoke')
    .description('revoke a join token by its id (the part before the dot)')
    .argument('<id>')
    .action(async (id: string) => {
      const view = await call(loadClientConfig(), 'DELETE /v1/join-tokens/:id', { params: { id: id.split('.')[0]! } });
      process.stderr.write(`rankd: join token ${view.id} revoked\n`);
    });
}
