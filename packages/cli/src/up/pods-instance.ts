// `rankd up --pods`: a rankd instance across pods that a PyTorchJob, a JobSet or RunAI's
// submit-dist started with MASTER_ADDR, RANK and WORLD_SIZE. The pod of RANK 0 runs the
// controller and an agent; every other pod runs an agent that joins it at MASTER_ADDR. The
// pods share a join secret (a mounted Secret, or a variable of the pod spec): the CA and
// the join token are derived from it, so nothing is trusted on first use.
import { connect } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveJoinMaterial, joinSecretProblem, readJoinSecret } from '@rankd/protocol/join-secret';
import { DEFAULT_CONTROLLER_PORT } from '@rankd/protocol/wire';
import { CliError, ExitCode } from '../exit-codes.js';
import { DaemonProcess } from './daemon-process.js';
import {
  goOnWith,
  openInstanceHome,
  POD_RANK_LABEL,
  printExport,
  readyLine,
  runningInstance,
  waitForNodes,
  writeClientSide,
  type InstanceRecord,
} from './instance.js';
import { holdInstance, type InstanceFlags } from './instance-life.js';
import { takeStartLock } from './start-lock.js';
import { waitFor } from './wait.js';
import { leaveWorkDir } from './work-dir.js';

export interface PodsFlags extends InstanceFlags {
  joinSecretFile?: string;
  port?: number;
  name?: string;
}

/** A worker's agent stops when pod 0's controller has been gone this long: pod 0 is done. */
const WORKER_ORPHAN_TIMEOUT = '20s';
const SECRET_ENV = 'RANKD_JOIN_SECRET';

interface Pod {
  masterAddr: string;
  rank: number;
  worldSize: number;
}

function podOf(env: NodeJS.ProcessEnv): Pod {
  const missing = ['MASTER_ADDR', 'RANK', 'WORLD_SIZE'].filter((k) => !env[k]);
  if (missing.length > 0)
    throw new CliError(
      `--pods needs MASTER_ADDR, RANK and WORLD_SIZE, as a PyTorchJob, a JobSet or submit-dist set them; ` +
        `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not set (RANKD_NOT_IN_ALLOCATION)`,
      ExitCode.Usage,
    );
  const rank = Number(env['RANK']);
  const worldSize = Number(env['WORLD_SIZE']);
  if (!Number.isInteger(worldSize) || worldSize < 1)
    throw new CliError(`WORLD_SIZE "${env['WORLD_SIZE']}" is not a number of pods`, ExitCode.Usage);
  if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize)
    throw new CliError(`RANK "${env['RANK']}" is not a pod index below WORLD_SIZE ${worldSize}`, ExitCode.Usage);
  return { masterAddr: env['MASTER_ADDR']!, rank, worldSize };
}

/** The secret from --join-secret-file, else from RANKD_JOIN_SECRET, which no child then inherits. */
function joinSecretOf(flags: PodsFlags): string {
  const fromEnv = process.env[SECRET_ENV];
  delete process.env[SECRET_ENV];
  try {
    if (flags.joinSecretFile) return readJoinSecret(flags.joinSecretFile);
  } catch (err) {
    throw new CliError(`${(err as Error).message} (${(err as { code?: string }).code})`, ExitCode.Usage);
  }
  if (!fromEnv)
    throw new CliError(
      `--pods needs the pods' shared join secret: --join-secret-file FILE (a mounted Secret) or ${SECRET_ENV}`,
      ExitCode.Usage,
    );
  const problem = joinSecretProblem(fromEnv);
  if (problem) throw new CliError(`${SECRET_ENV}: ${problem} (RANKD_JOIN_SECRET_INVALID)`, ExitCode.Usage);
  return fromEnv;
}

export async function upPods(flags: PodsFlags, admin: string): Promise<number> {
  const pod = podOf(process.env);
  const secret = joinSecretOf(flags);
  const home = flags.workDir ?? join(tmpdir(), 'rankd-pods');
  const port = flags.port ?? DEFAULT_CONTROLLER_PORT;
  const name = flags.name ?? process.env['RANKD_NODE_NAME'] ?? hostname().split('.')[0]!;
  const host = pod.masterAddr.includes(':') ? `[${pod.masterAddr}]` : pod.masterAddr;
  const url = `https://${host}:${port}`;
  const agentArgs = [
    'agent',
    ...['--ephemeral', '--work-dir', home, '--controller', url, '--join-secret-file', '-'],
    ...['--name', name, '--label', `${POD_RANK_LABEL}=${pod.rank}`],
  ];
  if (pod.rank !== 0) return worker(pod, home, url, agentArgs, secret, flags);

  openInstanceHome(home);
  const release = await takeStartLock(home, flags.timeoutMs);
  const running = await runningInstance(home);
  if (running) {
    process.stderr.write(`rankd: this pod already runs the instance's controller (${running.record.url}): using it\n`);
    release();
    printExport(home);
    return flags.command.length > 0 ? holdInstance(home, flags, { attached: true }) : ExitCode.Ok;
  }
  const { caHash } = deriveJoinMaterial(secret);
  const started = Date.now();
  const controller = new DaemonProcess(
    'controller',
    [
      'controller',
      ...['--listen', `0.0.0.0:${port}`, '--advertise', pod.masterAddr, '--admin', admin],
      ...['--ephemeral', '--work-dir', home, ...(flags.keep ? ['--keep'] : [])],
      ...['--join-secret-file', '-', '--join-secret-uses', String(pod.worldSize), '--ready-json'],
    ],
    join(home, 'controller.log'),
    {},
    { stdinText: secret + '\n', outFile: join(home, 'controller.out'), detached: flags.detach },
  );
  let agent: DaemonProcess | null = null;
  const stop = async () => {
    await agent?.stop();
    await controller.stop();
    if (!flags.keep) leaveWorkDir(home, null);
  };
  try {
    const ready = await within(
      waitFor('the controller', flags.timeoutMs, () => {
        if (!controller.alive) throw new CliError(ended(controller), ExitCode.Software);
        return readyLine(join(home, 'controller.out'), caHash);
      }),
      () => `the controller did not listen within ${flags.timeoutMs / 1000} s; its log ends:\n${controller.tail()}`,
    );
    const record: InstanceRecord = {
      kind: 'pods',
      nodes: [],
      ready: [],
      url: ready.url,
      pids: [controller.child.pid!],
      createdAt: new Date().toISOString(),
    };
    const client = writeClientSide(home, ready, record);
    const own = new DaemonProcess(
      'agent',
      agentArgs,
      join(home, 'agent.log'),
      {},
      {
        stdinText: secret + '\n',
        detached: flags.detach,
      },
    );
    agent = own;
    const outcome = await waitForNodes(client, { pods: pod.worldSize }, flags.timeoutMs, () =>
      !controller.alive ? ended(controller) : !own.alive ? ended(own) : null,
    );
    goOnWith(outcome, flags, join(home, 'controller.log'));
    writeClientSide(home, ready, {
      ...record,
      nodes: outcome.ready,
      ready: outcome.ready,
      pids: [own.child.pid!, controller.child.pid!],
    });
    process.stderr.write(
      `rankd: pods: controller ${ready.url}, ${outcome.ready.length} of ${pod.worldSize} pods ready ` +
        `in ${((Date.now() - started) / 1000).toFixed(1)} s; instance directory ${home}\n`,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  release();
  printExport(home);
  return holdInstance(home, flags, {
    attached: false,
    stop,
    gone: () => (!controller.alive ? ended(controller) : agent && !agent.alive ? ended(agent) : null),
    exited: Promise.race([controller.exited, agent.exited]),
  });
}

/** A pod other than 0: its agent joins pod 0's controller once that listens, and runs until it is gone. */
async function worker(
  pod: Pod,
  home: string,
  url: string,
  agentArgs: string[],
  secret: string,
  flags: PodsFlags,
): Promise<number> {
  const port = Number(new URL(url).port);
  // every pod of a PyTorchJob runs the same command line: this one serves, pod 0 runs the command
  if (flags.command.length > 0)
    process.stderr.write(`rankd: pod ${pod.rank}: the command after -- runs on pod 0; this pod runs an agent only\n`);
  // pod 0 may start after this one, and its name may not resolve until it does
  await within(
    waitFor(`pod 0's controller at ${url}`, flags.timeoutMs, () => reachable(pod.masterAddr, port)),
    () => `pod 0's controller at ${url} did not answer within ${flags.timeoutMs / 1000} s (MASTER_ADDR, --port)`,
  );
  openInstanceHome(home);
  const agent = new DaemonProcess(
    'agent',
    [...agentArgs, '--orphan-timeout', WORKER_ORPHAN_TIMEOUT],
    join(home, 'agent.log'),
    {},
    { stdinText: secret + '\n', detached: flags.detach },
  );
  process.stderr.write(`rankd: pod ${pod.rank}: agent (pid ${agent.child.pid}) joining ${url}; log ${agent.logFile}\n`);
  if (flags.detach) return ExitCode.Ok;
  return holdInstance(
    home,
    { ...flags, command: [] },
    {
      attached: false,
      stop: async () => {
        await agent.stop();
        leaveWorkDir(home, null);
      },
      exited: agent.exited,
      gone: () => `the agent ended (${agent.exitCode === 0 ? "pod 0's controller is gone" : ended(agent)})`,
    },
  ).then((code) => (agent.exitCode === 0 ? ExitCode.Ok : code));
}

function reachable(host: string, port: number): Promise<true | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok ? true : undefined);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/** A start-up wait that ran out of time: exit 69 with `why`, not an internal error with a stack. */
async function within<T>(wait: Promise<T>, why: () => string): Promise<T> {
  try {
    return await wait;
  } catch (err) {
    if (!(err instanceof Error) || err instanceof CliError || !err.message.startsWith('timed out')) throw err;
    throw new CliError(`${why()} (RANKD_UNREACHABLE)`, ExitCode.Unreachable);
  }
}

function ended(daemon: DaemonProcess): string {
  return `the ${daemon.label} ended; its log (${daemon.logFile}) ends:\n${daemon.tail()}`;
}
