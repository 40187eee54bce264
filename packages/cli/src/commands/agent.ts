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
    .option('--controller <url>', 'controller URL, e.g. http://10.0.0.1:7480')
    .option('--token-file <file>', 'file holding the cluster join token')
    .option('--name <name>', 'node name (default: the hostname)')
    .option('--label <k=v>', 'node label (repeatable)', collect)
    .option('--address <ip>', 'address other nodes reach this one at (default: as the controller sees it)')
    .option('--spool-dir <dir>', 'where rank output and state live (default /var/lib/rankd/spool)')
    .option('--root <dir>', 'read facts under this root instead of / (captured or generated trees)')
    .option('--allow-root', 'let jobs run ranks as root (off by default)')
    .action(async (flags: AgentFlags) => {
      // loaded here, not at the top: other commands must not pay for the agent
      const { DEFAULT_CONFIG_FILE, configFromEnv, parseLabels, readConfigFile, resolveAgentConfig, startAgent } = await import('@rankd/agent');
      const { factsSource } = await import('../facts-source.js');
      let config;
      try {
        const fromFlags: AgentConfigFile = {
          ...(flags.controller ? { controller: flags.controller } : {}),
          ...(flags.tokenFile ? { tokenFile: flags.tokenFile } : {}),
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
      const agent = await startAgent({ config, facts: factsSource(config.factsRoot) });
      const signal = await untilSignal();
      agent.log.info({ signal }, 'agent stopping');
      await agent.stop();
    });
}
