// `rankd up --slurm`: a whole rankd instance inside the Slurm allocation this runs in, as
// `srun flux start` makes a Flux instance. Two steps beside the job's own:
// - rankd-controller: one task on the first node, listening on a free port;
// - rankd-agents: one ephemeral agent per node, under the step's cgroup, so the facts each
//   agent reads (its cpuset) are what Slurm granted the job on that node.
// A fresh join secret goes to both steps on srun's standard input: the controller derives
// its CA and one join token per node from it, the agents the same token and the CA's pin.
// Nothing secret is in any argv, environment or file outside the 0700 instance directory.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { deriveJoinMaterial, newJoinSecret } from '@rankd/protocol/join-secret';
import { CliError, ExitCode } from '../exit-codes.js';
import { DaemonProcess } from './daemon-process.js';
import {
  goOnWith,
  openInstanceHome,
  printEndTrap,
  printExport,
  readRecord,
  readyLine,
  runningInstance,
  waitForNodes,
  writeClientSide,
  type InstanceRecord,
} from './instance.js';
import { holdInstance, type InstanceFlags } from './instance-life.js';
import {
  allocationOf,
  endSteps,
  expandNodelist,
  inBatchScript,
  nodeAddress,
  rankdSteps,
  slurmWorkDir,
  STEP_NAMES,
  stepLauncher,
} from './slurm.js';
import { takeStartLock } from './start-lock.js';
import { waitFor } from './wait.js';
import { CONTROLLER_SUBDIR, leaveWorkDir } from './work-dir.js';

/** Between SIGTERM to rankd's steps and Slurm's own cancel. */
const STEP_STOP_GRACE_MS = 15_000;

export async function upSlurm(flags: InstanceFlags, admin: string): Promise<number> {
  const allocation = allocationOf(process.env);
  const home = flags.workDir ?? slurmWorkDir(process.env, allocation.jobId);
  // asked before anything is made here: a Slurm that does not answer leaves no directory behind.
  // rankd's steps are asked at once too, off the start's path; asked again below if any.
  const [nodes, stepsAtStart] = await Promise.all([expandNodelist(allocation.nodelist), rankdSteps(allocation.jobId)]);
  const first = nodes[0]!;
  const address = await nodeAddress(first);
  openInstanceHome(home);
  const release = await takeStartLock(home, flags.timeoutMs);
  const running = await runningInstance(home);
  if (running) {
    process.stderr.write(
      `rankd: job ${allocation.jobId} already has a rankd instance (${running.record.url}, ` +
        `${running.record.ready.length} nodes): using it\n`,
    );
    release();
    printExport(home);
    if (flags.detach && inBatchScript(process.env)) printEndTrap(home);
    return flags.command.length > 0 ? holdInstance(home, flags, { attached: true }) : ExitCode.Ok;
  }

  try {
    refuseLeftDir(home);
  } catch (err) {
    release();
    throw err;
  }
  try {
    // none then: any since are an up's on this host (the lock and runningInstance saw to those)
    // or one's that started on another node in the same instant, which nothing here can order
    if (stepsAtStart.length > 0) await refuseStepsElsewhere(allocation.jobId, home);
  } catch (err) {
    release();
    // nothing of an instance is in it (refuseLeftDir): it goes only if rankd made it
    leaveWorkDir(home, null);
    throw err;
  }
  const secret = newJoinSecret();
  const { caHash } = deriveJoinMaterial(secret);
  const detached = flags.detach;
  const started = Date.now();

  const controller = new DaemonProcess(
    'controller',
    [
      'controller',
      ...['--listen', '0.0.0.0:0', '--advertise', address, '--admin', admin],
      ...['--ephemeral', '--work-dir', home, ...(flags.keep ? ['--keep'] : [])],
      ...['--join-secret-file', '-', '--join-secret-uses', String(nodes.length), '--ready-json'],
    ],
    join(home, 'controller.log'),
    {},
    {
      launcher: stepLauncher(STEP_NAMES.controller, [first]),
      stdinText: secret + '\n',
      outFile: join(home, 'controller.out'),
      detached,
    },
  );
  // the agents start beside the controller, not after it: each gets the secret now and the
  // controller's URL (its port is chosen when it listens) as the next line of its stdin
  const agents = new DaemonProcess(
    'agents',
    ['agent', '--ephemeral', '--work-dir', home, '--controller', '-', '--join-secret-file', '-'],
    join(home, 'agents.log'),
    {},
    { launcher: stepLauncher(STEP_NAMES.agents, nodes), stdinText: secret + '\n', stdinOpen: true, detached },
  );
  const stop = async () => {
    agents.finishStdin('');
    await endSteps(allocation.jobId, STEP_STOP_GRACE_MS);
    if (!flags.keep) leaveWorkDir(home, null);
  };
  try {
    const ready = await waitFor(`the controller on ${first}`, flags.timeoutMs, () => {
      if (!controller.alive) throw new CliError(ended(controller), ExitCode.Software);
      return readyLine(join(home, 'controller.out'), caHash);
    }).catch((err: unknown) => {
      if (err instanceof CliError) throw err;
      throw new CliError(
        `${first}: the controller was not ready within ${flags.timeoutMs / 1000} s ` +
          `(RANKD_NODES_NOT_READY); see ${controller.logFile}`,
        ExitCode.Unreachable,
      );
    });
    const record: InstanceRecord = {
      kind: 'slurm',
      jobId: allocation.jobId,
      nodes,
      ready: [],
      url: ready.url,
      createdAt: new Date().toISOString(),
    };
    const client = writeClientSide(home, ready, record);
    agents.finishStdin(ready.url + '\n');
    const outcome = await waitForNodes(client, { names: nodes }, flags.timeoutMs, () =>
      !controller.alive ? ended(controller) : !agents.alive ? ended(agents) : null,
    );
    goOnWith(outcome, flags, join(home, 'agents.log'));
    writeClientSide(home, ready, { ...record, ready: outcome.ready });
    process.stderr.write(
      [
        `rankd: job ${allocation.jobId}: controller ${ready.url} on ${first}, ` +
          `${outcome.ready.length} of ${nodes.length} nodes ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
        `rankd: instance directory ${home} (logs: controller.log, agents.log); "rankd down" ends it, and so does the end of the job`,
        '',
      ].join('\n'),
    );
  } catch (err) {
    await stop();
    await Promise.all([controller.exited, agents.exited]);
    throw err;
  }
  release();
  printExport(home);
  if (flags.detach && inBatchScript(process.env)) printEndTrap(home);
  return holdInstance(home, flags, {
    attached: false,
    stop,
    gone: () => (!controller.alive ? ended(controller) : !agents.alive ? ended(agents) : null),
    exited: Promise.race([controller.exited, agents.exited]),
  });
}

/**
 * An instance directory that a controller used and whose instance does not answer: its CA
 * is another secret's, and its controller.out another controller's. Slurm reuses job ids
 * (a new StateSaveLocation, MaxJobId), and --keep leaves a directory on purpose: start
 * nothing over it.
 */
function refuseLeftDir(home: string): void {
  if (!existsSync(join(home, CONTROLLER_SUBDIR)) && !existsSync(join(home, 'controller.out'))) return;
  const record = readRecord(home);
  const was = record ? ` (job ${record.jobId ?? '?'}, started ${record.createdAt})` : '';
  throw new CliError(
    `${home} holds an instance that does not answer${was}: kept with --keep, or left by an earlier job ` +
      'with the same id. Remove it, or give --work-dir (RANKD_INSTANCE_DIR_LEFT)',
    ExitCode.Software,
  );
}

/**
 * rankd's steps in the job while this instance directory holds none: `up` ran on another node
 * of the allocation (the start lock and the directory are per host), or with another
 * --work-dir. A second instance would be refused at each node by the first one's agents.
 */
async function refuseStepsElsewhere(jobId: string, home: string): Promise<void> {
  const steps = await rankdSteps(jobId);
  if (steps.length === 0) return;
  throw new CliError(
    `job ${jobId} already runs rankd's steps ${steps.join(' ')}, but ${home} holds no instance of them: ` +
      '"rankd up --slurm" ran on another node of the allocation, or with another --work-dir. ' +
      'Run rankd there, or end that instance with "rankd down" there (RANKD_INSTANCE_ELSEWHERE)',
    ExitCode.Unreachable,
  );
}

function ended(step: DaemonProcess): string {
  return `the ${step.label} step ended; its log (${step.logFile}) ends:\n${step.tail()}`;
}
