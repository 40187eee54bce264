// `rankd agent`: runs the node agent in the foreground (systemd runs it so).
import type { Command } from 'commander';
import type { AgentConfigFile } from '@rankd/agent';
import { CliError, ExitCode } from '../exit-codes.js';
import { collect } from '../options.js';
import { untilSignal } from '../signals.js';

interface AgentFlags {
  config?: string;
  controller?: string;
  tokenFile?: string;
  joinTokenFile?: string;
  joinToken?: string;
  caHash?: string;
  stateDir?: string;
  name?: string;
  label?: string[];
  address?: string;
  spoolDir?: string;
  root?: string;
  allowRoot?: boolean;
}

export function register(program: Command): void {
  program
    .command('agent')
    .description('run the node agent in the foreground')
    .option('--config <file>', 'config file (default /etc/rankd/agent.json when present)')
    .option('--controller <url>', 'controller URL, e.g. https://10.0.0.1:7480')
    .option(
      '--join-token-file <file>',
      'file (mode 0600) holding the join token for the first enrollment, as rankd join-command prints it; or set RANKD_JOIN_TOKEN',
    )
    .option('--token-file <file>', 'the same as --join-token-file')
    .option(
      '--join-token <token>',
      'the join token itself: visible to every user in ps while the agent runs (prefer --join-token-file or RANKD_JOIN_TOKEN)',
    )
    .option('--ca-hash <sha256:hex>', "the controller CA's public key hash to pin at enrollment")
    .option('--state-dir <dir>', 'where the node key, certificate and pinned CA live (default /var/lib/rankd/agent)')
    .option('--name <name>', 'node name (default: the hostname)')
    .option('--label <k=v>', 'node label (repeatable)', collect)
    .option('--address <ip>', 'address other nodes reach this one at (default: as the controller sees it)')
    .option('--spool-dir <dir>', 'where rank output and state live (default /var/lib/rankd/spool)')
    .option('--root <dir>', 'read facts under this root instead of / (captured or generated trees)')
    .option('--allow-root', 'let jobs run ranks as root (off by default)')
    .action(async (flags: AgentFlags) => {
      // loaded here, not at the top: other commands must not pay for the agent. The agent
      // comes from its bundle when current (load-daemon.ts): one module graph, a smaller daemon
      const { loadDaemon } = await import('@rankd/agent');
      const {
        DEFAULT_CONFIG_FILE,
        configFromEnv,
        factsSource,
        parseLabels,
        readConfigFile,
        resolveAgentConfig,
        startAgent,
      } = await loadDaemon();
      if (flags.joinToken)
        process.stderr.write(
          "rankd: warning: --join-token puts the join token in this process's command line, which every user of this machine can read (ps); use --join-token-file FILE (mode 0600) or RANKD_JOIN_TOKEN instead\n",
        );
      const tokenFile = flags.joinTokenFile ?? flags.tokenFile;
      let config;
      try {
        const fromEnv = configFromEnv(process.env);
        // read once: ranks, helpers and shells the agent starts must not inherit the secret
        delete process.env['RANKD_JOIN_TOKEN'];
        const fromFlags: AgentConfigFile = {
          ...(flags.controller ? { controller: flags.controller } : {}),
          ...(tokenFile ? { tokenFile } : {}),
          ...(flags.joinToken ? { joinToken: flags.joinToken } : {}),
          ...(flags.caHash ? { caHash: flags.caHash } : {}),
          ...(flags.stateDir ? { stateDir: flags.stateDir } : {}),
          ...(flags.name ? { name: flags.name } : {}),
          ...(flags.label ? { labels: parseLabels(flags.label) } : {}),
          ...(flags.address ? { address: flags.address } : {}),
          ...(flags.spoolDir ? { spoolDir: flags.spoolDir } : {}),
          ...(flags.root ? { factsRoot: flags.root } : {}),
          ...(flags.allowRoot ? { allowRoot: true } : {}),
        };
        config = resolveAgentConfig(
          readConfigFile(flags.config ?? DEFAULT_CONFIG_FILE, Boolean(flags.config)),
          fromEnv,
          fromFlags,
        );
      } catch (err) {
        throw new CliError((err as Error).message, ExitCode.Usage);
      }
      let agent;
      try {
        agent = await startAgent({ config, facts: factsSource(config.factsRoot) });
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code?.startsWith('RANKD_'))
          throw new CliError(`${(err as Error).message} (${code})`, ExitCode.Unauthorized);
        throw err;
      }
      const ended = await Promise.race([
        untilSignal().then((signal) => ({ signal, fatal: null })),
        agent.fatal.then((fatal) => ({ signal: null, fatal })),
      ]);
      agent.log.info({ signal: ended.signal, fatal: ended.fatal?.code }, 'agent stopping');
      await agent.stop();
      if (ended.fatal) throw new CliError(`${ended.fatal.message} (${ended.fatal.code})`, ExitCode.Unauthorized);
    });
}
