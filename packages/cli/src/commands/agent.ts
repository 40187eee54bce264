// `rankd agent`: runs the node agent in the foreground (systemd runs it so).
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentConfigFile, RunningAgent } from '@rankd/agent';
import { CliError, ExitCode } from '../exit-codes.js';
import { collect, duration } from '../options.js';
import { untilSignal } from '../signals.js';
import { agentSubdir, ensureWorkDir, freshSubdir, leaveWorkDir, newWorkDir } from '../up/work-dir.js';

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
  ephemeral?: boolean;
  workDir?: string;
  joinSecretFile?: string;
  orphanTimeout?: number;
}

/** How long an ephemeral agent waits for a controller that went away before it stops itself. */
const DEFAULT_ORPHAN_TIMEOUT_MS = 60_000;

export function register(program: Command): void {
  program
    .command('agent')
    .description('run the node agent in the foreground')
    .option('--config <file>', 'config file (default /etc/rankd/agent.json when present)')
    .option(
      '--controller <url>',
      'controller URL, e.g. https://10.0.0.1:7480 ("-": the line after the join secret on standard input, as rankd up --slurm passes it)',
    )
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
    .option(
      '--ephemeral',
      'an agent of one allocation or pod set: runs as you, ranks run as you only, state in --work-dir, removed when it stops (rankd up --slurm and --pods start these)',
    )
    .option(
      '--work-dir <dir>',
      'with --ephemeral: the instance directory on this host (default: a new one under $TMPDIR); the agent keeps its files in agent-NAME/ there',
    )
    .option(
      '--join-secret-file <file|->',
      'the instance\'s join secret ("-": standard input, as srun passes it): the join token and the CA pin are derived from it',
    )
    .option(
      '--orphan-timeout <duration>',
      `with --ephemeral: stop after the controller has been gone this long (default ${DEFAULT_ORPHAN_TIMEOUT_MS / 1000}s)`,
      duration,
    )
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
      if (!flags.ephemeral && (flags.workDir || flags.orphanTimeout !== undefined))
        throw new CliError('--work-dir and --orphan-timeout go with --ephemeral', ExitCode.Usage);
      // the secret's token would win over the other without a word
      if (flags.joinSecretFile && (tokenFile || flags.joinToken))
        throw new CliError(
          '--join-secret-file derives the join token: not with --join-token or --join-token-file',
          ExitCode.Usage,
        );
      let config;
      let place: EphemeralPlace | null = null;
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
        if (flags.controller === '-' && flags.joinSecretFile !== '-')
          throw new Error(
            '--controller - reads the URL after the join secret on standard input: add --join-secret-file -',
          );
        if (flags.joinSecretFile) {
          const { deriveJoinMaterial, readJoinSecret, checkedJoinSecret } = await import('@rankd/protocol/join-secret');
          let secret: string;
          if (flags.controller === '-') {
            // the secret now, the URL once the controller listens: this agent starts beside it, not after it
            const [first = '', url = ''] = readFileSync(0, 'utf8').split('\n');
            secret = checkedJoinSecret(first, 'standard input');
            if (!url) throw new Error('--controller -: standard input ended before the controller URL');
            fromFlags.controller = url;
          } else secret = readJoinSecret(flags.joinSecretFile);
          const derived = deriveJoinMaterial(secret);
          if (flags.caHash && flags.caHash !== derived.caHash)
            throw new Error(`--ca-hash ${flags.caHash} is not the join secret's CA (${derived.caHash})`);
          Object.assign(fromFlags, { joinToken: derived.joinToken, caHash: derived.caHash });
        }
        // the service agent's /etc/rankd/agent.json is not an ephemeral agent's to read
        const file = flags.config
          ? readConfigFile(flags.config, true)
          : flags.ephemeral
            ? {}
            : readConfigFile(DEFAULT_CONFIG_FILE, false);
        if (flags.ephemeral) {
          // inside a Slurm step, the node is called what Slurm calls it
          const name = flags.name ?? fromEnv.name ?? process.env['SLURMD_NODENAME'];
          // checked before it names a directory that is emptied: "x/../../y" would name another one
          const { nodeNameProblem } = await import('@rankd/protocol');
          const problem = nodeNameProblem(name ?? hostname().split('.')[0]!);
          if (problem) throw new Error(problem);
          place = ephemeralPlace(flags.workDir, name ?? hostname().split('.')[0]!);
          Object.assign(fromFlags, {
            ephemeral: true,
            ...(name ? { name } : {}),
            stateDir: flags.stateDir ?? join(place.own, 'state'),
            spoolDir: flags.spoolDir ?? join(place.own, 'spool'),
          });
        }
        config = resolveAgentConfig(file, fromEnv, fromFlags);
      } catch (err) {
        if (place) leaveWorkDir(place.workDir, place.own);
        const code = (err as { code?: string }).code;
        // another agent of this name runs in the work directory: it is the one to reach, as with a controller
        const exit = code === 'RANKD_WORK_DIR_IN_USE' ? ExitCode.Unreachable : ExitCode.Usage;
        throw new CliError((err as Error).message + (code?.startsWith('RANKD_') ? ` (${code})` : ''), exit);
      }
      // heard from now on: a SIGTERM while the agent enrolls still ends its ranks and removes its directory
      const signalled = place ? untilSignal() : null;
      let agent;
      try {
        agent = await startAgent({ config, facts: factsSource(config.factsRoot) });
      } catch (err) {
        if (place) leaveWorkDir(place.workDir, place.own);
        const code = (err as { code?: string }).code;
        if (code?.startsWith('RANKD_'))
          throw new CliError(withCode((err as Error).message, code), ExitCode.Unauthorized);
        throw err;
      }
      const ended = await Promise.race([
        (signalled ?? untilSignal()).then((signal) => ({ signal, fatal: null })),
        agent.fatal.then((fatal) => ({ signal: null, fatal })),
        ...(place ? [untilOrphaned(agent.link, flags.orphanTimeout ?? DEFAULT_ORPHAN_TIMEOUT_MS)] : []),
      ]);
      try {
        agent.log.info({ signal: ended.signal, fatal: ended.fatal?.code }, 'agent stopping');
        await agent.stop();
      } finally {
        // whatever the stop met (a log write to a gone srun, …), an ephemeral agent leaves nothing
        if (place) leaveWorkDir(place.workDir, place.own);
      }
      if (ended.fatal) throw new CliError(withCode(ended.fatal.message, ended.fatal.code), ExitCode.Unauthorized);
    });
}

/** The message with its stable code after it, once (an enrollment refusal's message already names it). */
function withCode(message: string, code: string): string {
  return message.includes(`(${code})`) ? message : `${message} (${code})`;
}

interface EphemeralPlace {
  workDir: string;
  /** This agent's subdirectory: state, spool. */
  own: string;
}

function ephemeralPlace(workDir: string | undefined, name: string): EphemeralPlace {
  const dir = workDir ?? newWorkDir(join(tmpdir(), 'rankd-agent-'));
  ensureWorkDir(dir);
  return { workDir: dir, own: freshSubdir(agentSubdir(dir, name)) };
}

/**
 * Settles once the controller link has been down for `timeoutMs` without coming back. The
 * clock runs from the start too: a link that never got the controller's welcome (it went
 * away right after the enrollment) sends no 'down', and the agent must not wait forever.
 */
function untilOrphaned(link: RunningAgent['link'], timeoutMs: number): Promise<{ signal: null; fatal: null }> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | null = null;
    const arm = () => {
      timer ??= setTimeout(() => {
        process.stderr.write(`rankd: agent: the controller has been gone for ${timeoutMs / 1000} s; stopping\n`);
        resolve({ signal: null, fatal: null });
      }, timeoutMs);
      // never what keeps the process alive once the agent stopped for another reason
      timer.unref();
    };
    link.on('down', arm);
    link.on('ready', () => {
      if (timer) clearTimeout(timer);
      timer = null;
    });
    if (!link.connected) arm();
  });
}
