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
    .option('--join-token <token>', 'join token for the first enrollment (rankd join-command prints it)')
    .option('--token-file <file>', 'file holding the join token (keeps it off the command line)')
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
      const { loadDaemon } = await import('@rankd/agent/load-daemon');
      const { DEFAULT_CONFIG_FILE, configFromEnv, factsSource, parseLabels, readConfigFile, resolveAgentConfig, startAgent } = await loadDaemon();
      let config;
      try {
        const fromFlags: AgentConfigFile = {
          ...(flags.controller ? { controller: flags.controller } : {}),
          ...(flags.tokenFile ? { tokenFile: flags.tokenFile } : {}),
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
        config = resolveAgentConfig(readConfigFile(flags.config ?? DEFAULT_CONFIG_FILE, Boolean(flags.config)), configFromEnv(process.env), fromFlags);
      } catch (err) {
        throw new CliError((err as Error).message, ExitCode.Usage);
      }
      let agent;
      try {
        agent = await startAgent({ config, facts: factsSource(config.factsRoot) });
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code?.startsWith('RANKD_')) throw new CliError(`${(err as Error).message} (${code})`, ExitCode.Unauthorized);
        throw err;
      }
      const ended = await Promise.race([untilSignal().then((signal) => ({ signal, fatal: null })), agent.fatal.then((fatal) => ({ signal: null, fatal }))]);
      agent.log.info({ signal: ended.signal, fatal: ended.fatal?.code }, 'agent stopping');
      await agent.stop();
      if (ended.fatal) throw new CliError(`${ended.fatal.message} (${ended.fatal.code})`, ExitCode.Unauthorized);
    });
}
