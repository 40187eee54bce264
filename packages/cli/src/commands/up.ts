// `rankd up`: a controller and one local agent as child processes, data under
// ~/.rankd, and the client config written so that every other command just works.
// `--slurm` and `--pods` start an instance across an allocation's nodes or a set of pods
// instead (up/slurm-instance.ts, up/pods-instance.ts).
import type { Command } from 'commander';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeList } from '@rankd/protocol';
import { clientConfigPath, rankdHome, type ClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { runJob } from '../client/run-job.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { duration, nonNegativeInt, positiveInt } from '../options.js';
import { untilSignal } from '../signals.js';
import { renderTable } from '../table.js';
import { DaemonProcess } from '../up/daemon-process.js';
import { waitFor } from '../up/wait.js';
import { USER_NAME } from '@rankd/protocol/user-name';
import { DEFAULT_CONTROLLER_PORT } from '@rankd/protocol/wire';

interface UpFlags {
  listen: string;
  name: string;
  heartbeatMs?: number;
  excludeAfter?: number;
  demo?: boolean;
  slurm?: boolean;
  pods?: boolean;
  detach?: boolean;
  keep?: boolean;
  timeout?: number;
  allowPartial?: boolean;
  workDir?: string;
  joinSecretFile?: string;
  port?: number;
}

/** How long --slurm and --pods wait for the controller, then for every node. */
const DEFAULT_INSTANCE_TIMEOUT_MS = 60_000;

/** The demo job's program, shipped with the CLI. */
const DEMO_PROGRAM = fileURLToPath(new URL('../../demo/allreduce.mjs', import.meta.url));

export function register(program: Command): void {
  program
    .command('up')
    .description('start a controller and a local agent (data under ~/.rankd) and keep them running until Ctrl-C')
    .option('--listen <addr>', 'controller address', '127.0.0.1:7480')
    .option('--name <name>', 'name of the local node (with --pods: of this pod; default its hostname)', defaultName())
    .option('--heartbeat-ms <ms>', 'agent heartbeat interval', positiveInt)
    .option(
      '--exclude-after <k>',
      "the controller's: drain a node that failed K attempts within an hour (default 2; 0: never)",
      nonNegativeInt,
    )
    .option('--demo', 'then run a demo job: 2 pinned ranks computing π together over TCP')
    .option(
      '--slurm',
      'inside a Slurm allocation: a controller on its first node and an agent on each (docs/instances.md)',
    )
    .option('--pods', 'in pods with MASTER_ADDR, RANK and WORLD_SIZE: the controller on RANK 0, an agent in each pod')
    .option(
      '--detach',
      'with --slurm or --pods: print "export RANKD_HOME=…" once every node is ready, and leave the instance ' +
        'running (in an sbatch script, also a trap that runs "rankd down" when the script exits)',
    )
    .option('--keep', 'with --slurm or --pods: keep the instance directory (database, logs) when it ends')
    .option(
      '--timeout <duration>',
      `with --slurm or --pods: how long to wait for the controller, then for every node (default ${DEFAULT_INSTANCE_TIMEOUT_MS / 1000}s)`,
      duration,
    )
    .option('--allow-partial', 'with --slurm or --pods: go on with the nodes that came up when some did not')
    .option(
      '--work-dir <dir>',
      'with --slurm or --pods: the instance directory (default $SLURM_TMPDIR/rankd or /tmp/rankd-JOBID; $TMPDIR/rankd-pods)',
    )
    .option(
      '--join-secret-file <file>',
      "with --pods: the pods' shared join secret (a mounted Secret); or set RANKD_JOIN_SECRET",
    )
    .option(
      '--port <port>',
      `with --pods: the controller's port on pod 0 (default ${DEFAULT_CONTROLLER_PORT})`,
      positiveInt,
    )
    .argument('[command...]', 'with --slurm or --pods: run this against the instance, then end it (on pod 0 only)')
    // the command's own options are its own: `rankd up --slurm rankd run -n 2 …`
    .passThroughOptions()
    .action(async (command: string[], flags: UpFlags) => {
      if (flags.slurm || flags.pods) {
        process.exitCode = await upInstance(flags, command);
        return;
      }
      const instanceOnly = (
        ['detach', 'keep', 'timeout', 'allowPartial', 'workDir', 'joinSecretFile', 'port'] as const
      ).filter((k) => flags[k] !== undefined);
      if (instanceOnly.length > 0 || command.length > 0)
        throw new CliError(
          `${instanceOnly.length > 0 ? `--${kebab(instanceOnly[0]!)}` : 'a command'} goes with --slurm or --pods`,
          ExitCode.Usage,
        );
      const home = rankdHome();
      const cluster = await startLocalCluster(home, flags);
      if (flags.demo) {
        process.stderr.write(`rankd: demo: rankd run -n 2 -- node ${DEMO_PROGRAM}\n`);
        const code = await runJob(
          cluster.client,
          { command: [process.execPath, DEMO_PROGRAM], placement: { ntasks: 2 }, cwd: home, name: 'demo' },
          { quiet: false, label: '{rank}: ' },
        );
        process.stderr.write(
          `rankd: demo job exited ${code}. The controller and agent keep running: try "rankd nodes", "rankd jobs". Ctrl-C stops them.\n`,
        );
      }
      const { code } = await Promise.race([
        untilSignal().then(() => ({ code: ExitCode.Ok })),
        cluster.controller.exited.then(() => ({ code: ExitCode.Software, why: 'controller' })),
        cluster.agent.exited.then(() => ({ code: ExitCode.Software, why: 'agent' })),
      ]);
      process.stderr.write('rankd: stopping agent and controller\n');
      await cluster.agent.stop();
      await cluster.controller.stop();
      process.exitCode = code;
    });
}

export interface LocalCluster {
  controller: DaemonProcess;
  agent: DaemonProcess;
  client: ClientConfig;
}

export async function startLocalCluster(home: string, flags: UpFlags): Promise<LocalCluster> {
  const controllerDir = join(home, 'controller');
  const agentDir = join(home, 'agent');
  // before anything is written: a running cluster's controller.json, config and logs stay as they are
  const { lockState } = await import('@rankd/controller/data-dir-lock');
  const lock = lockState(controllerDir);
  if (lock.holder && lock.stale === null) throw alreadyRunning(lock.holder.pid, lock.url, controllerDir);
  if (lock.holder)
    process.stderr.write(
      `rankd: the last controller of ${controllerDir} did not stop cleanly (${lock.stale}); its lock is taken over\n`,
    );
  mkdirSync(controllerDir, { recursive: true, mode: 0o700 });
  mkdirSync(agentDir, { recursive: true, mode: 0o700 });
  const stateFile = join(controllerDir, 'controller.json');
  rmSync(stateFile, { force: true });

  // the controller options `rankd up` passes on
  const passed = [
    ...(flags.heartbeatMs ? ['--heartbeat-ms', String(flags.heartbeatMs)] : []),
    ...(flags.excludeAfter !== undefined ? ['--exclude-after', String(flags.excludeAfter)] : []),
  ];
  // the person running `rankd up` is the cluster's first admin, under their login name
  const admin = adminName();
  const controller = new DaemonProcess(
    'controller',
    ['controller', '--listen', flags.listen, '--data-dir', controllerDir, '--admin', admin, ...passed],
    join(home, 'controller.log'),
  );
  const state = await untilReady(
    controller,
    'the controller to listen',
    () => {
      try {
        return JSON.parse(readFileSync(stateFile, 'utf8')) as { url: string; ca: string; caHash: string };
      } catch {
        return undefined;
      }
    },
    // another `rankd up` started its controller between the check above and this one's start
    () => {
      if (controller.exitCode !== ExitCode.Unreachable) return null;
      const now = lockState(controllerDir);
      return now.holder && now.stale === null ? alreadyRunning(now.holder.pid, now.url, controllerDir) : null;
    },
  );
  const url = state.url;
  // the controller speaks TLS only; its CA is what this client (and the local agent) trust
  const client: ClientConfig = {
    url,
    token: readFileSync(join(controllerDir, 'api-token'), 'utf8').trim(),
    ca: state.ca,
  };
  const configPath = clientConfigPath();
  writeFileSync(configPath + '.tmp', JSON.stringify(client, null, 2) + '\n', { mode: 0o600 });
  renameSync(configPath + '.tmp', configPath);

  // the local agent enrolls like any other: a single-use join token, the CA pinned by hash
  // (once enrolled, its state directory holds its certificate and the token is not used)
  const body = { ttlSeconds: 600, uses: 1, description: 'rankd up: local agent' };
  const minted = await call(client, 'POST /v1/join-tokens', { body });
  const agent = new DaemonProcess(
    'agent',
    [
      'agent',
      '--controller',
      url,
      '--ca-hash',
      minted.caHash,
      '--state-dir',
      join(agentDir, 'state'),
      '--name',
      flags.name,
      '--spool-dir',
      join(agentDir, 'spool'),
      // a personal cluster runs jobs as whoever started it, root included
      ...(process.getuid?.() === 0 ? ['--allow-root'] : []),
    ],
    join(home, 'agent.log'),
    // the token by environment, not argv: every user of this machine can read argv (ps)
    { RANKD_JOIN_TOKEN: minted.token },
  );
  let nodes: NodeList['nodes'];
  try {
    nodes = await untilReady(agent, `node "${flags.name}" to be ready`, async () => {
      if (!controller.alive)
        throw new CliError(`the controller exited; its log ends:\n${controller.tail()}`, ExitCode.Software);
      const { nodes } = await call(client, 'GET /v1/nodes');
      return nodes.some((n) => n.name === flags.name && n.state === 'ready' && n.connected) ? nodes : undefined;
    });
  } catch (err) {
    await controller.stop();
    throw err;
  }

  // the dashboard's one-time sign-in, as Jupyter prints its URL at start
  const login = await call(client, 'POST /v1/dashboard/login-codes');
  process.stderr.write(
    [
      `rankd: controller  ${url}  (pid ${controller.child.pid}, data ${controllerDir}, log ${controller.logFile})`,
      `rankd: dashboard   ${new URL(login.path, url).toString()}  (one sign-in within 5 minutes; "rankd dashboard" prints another)`,
      `rankd: agent       ${flags.name}  (pid ${agent.child.pid}, spool ${join(agentDir, 'spool')}, log ${agent.logFile})`,
      `rankd: client config written to ${configPath}; try "rankd nodes". Ctrl-C stops both.`,
      '',
    ].join('\n'),
  );
  process.stdout.write(
    renderTable(
      ['NAME', 'STATE', 'ADDRESS', 'CPUS', 'NUMA'],
      nodes.map((n) => [n.name, n.state, n.address ?? '-', String(n.cpus ?? '-'), String(n.numaNodes ?? '-')]),
    ),
  );
  return { controller, agent, client };
}

/** The login name when it is a valid rankd user name, else "admin". */
function adminName(): string {
  let login = '';
  try {
    login = userInfo().username;
  } catch {
    // no passwd entry (a container's arbitrary uid)
  }
  return USER_NAME.test(login) ? login : 'admin';
}

/**
 * A second `rankd up` on one home exits 69 and leaves the first alone, as `pg_ctl start` on
 * a running cluster's data directory refuses (with its pid): attaching to a cluster that
 * another terminal owns, and whose Ctrl-C would stop it under us, is not what up is for.
 */
function alreadyRunning(pid: number, url: string | null, controllerDir: string): CliError {
  return new CliError(
    `a controller is already running (pid ${pid}) at ${url ?? '(an address not yet written: it is starting)'}\n` +
      `rankd: it uses ${controllerDir}: use it as it is ("rankd nodes"), or stop it before another "rankd up"`,
    ExitCode.Unreachable,
  );
}

async function untilReady<T>(
  daemon: DaemonProcess,
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  explainExit: () => CliError | null = () => null,
): Promise<T> {
  try {
    return await waitFor(what, 20_000, () => {
      if (!daemon.alive)
        throw (
          explainExit() ??
          new CliError(
            `the ${daemon.label} exited; its log (${daemon.logFile}) ends:\n${daemon.tail()}`,
            ExitCode.Software,
          )
        );
      return probe();
    });
  } catch (err) {
    await daemon.stop(1000);
    if (err instanceof CliError) throw err;
    throw new CliError(`${(err as Error).message}; see ${daemon.logFile}`, ExitCode.Software);
  }
}

async function upInstance(flags: UpFlags, command: string[]): Promise<number> {
  if (flags.slurm && flags.pods)
    throw new CliError('--slurm and --pods are two kinds of instance: use one', ExitCode.Usage);
  if (flags.demo) throw new CliError('--demo runs on this machine alone: not with --slurm or --pods', ExitCode.Usage);
  if (flags.detach && command.length > 0)
    throw new CliError(
      '--detach leaves the instance running; a command after it ends the instance: use one',
      ExitCode.Usage,
    );
  const instance = {
    detach: flags.detach ?? false,
    keep: flags.keep ?? false,
    timeoutMs: flags.timeout ?? DEFAULT_INSTANCE_TIMEOUT_MS,
    allowPartial: flags.allowPartial ?? false,
    ...(flags.workDir ? { workDir: resolve(flags.workDir) } : {}),
    command,
  };
  if (flags.slurm) {
    if (flags.joinSecretFile || flags.port)
      throw new CliError('--join-secret-file and --port go with --pods (--slurm makes its own secret)', ExitCode.Usage);
    const { upSlurm } = await import('../up/slurm-instance.js');
    return upSlurm(instance, adminName());
  }
  const { upPods } = await import('../up/pods-instance.js');
  return upPods(
    {
      ...instance,
      ...(flags.joinSecretFile ? { joinSecretFile: flags.joinSecretFile } : {}),
      ...(flags.port ? { port: flags.port } : {}),
      ...(flags.name !== defaultName() ? { name: flags.name } : {}),
    },
    adminName(),
  );
}

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}

function defaultName(): string {
  return hostname().split('.')[0]!;
}
