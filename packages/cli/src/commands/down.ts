// `rankd down`: ends the instance `rankd up --slurm` or `--pods` started, whose home is
// RANKD_HOME: every daemon of it on every node, then the instance directory here.
import type { Command } from 'commander';
import { rankdHome } from '../client/config.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { isInstanceDaemon } from '../up/daemon-pids.js';
import { readRecord } from '../up/instance.js';
import { leaveWorkDir } from '../up/work-dir.js';

/** Between SIGTERM and Slurm's cancel (or SIGKILL, for a pod's daemons). */
const STOP_GRACE_MS = 15_000;

export function register(program: Command): void {
  program
    .command('down')
    .description('end the instance that "rankd up --slurm" or "--pods" started (the one RANKD_HOME names)')
    .option('--keep', 'keep the instance directory here (logs) after its daemons stopped')
    .action(async (flags: { keep?: boolean }) => {
      const home = rankdHome();
      const record = readRecord(home);
      if (!record)
        throw new CliError(
          `${home} holds no instance (no instance.json): "rankd down" ends what "rankd up --slurm" or ` +
            '"rankd up --pods" started; set RANKD_HOME as they printed it',
          ExitCode.Usage,
        );
      if (record.kind === 'slurm') {
        const { endSteps } = await import('../up/slurm.js');
        const cancelled = await endSteps(record.jobId!, STOP_GRACE_MS);
        if (cancelled.length > 0)
          process.stderr.write(`rankd: steps ${cancelled.join(' ')} did not stop on SIGTERM: cancelled\n`);
      } else {
        await stopLocal(record.pids ?? [], home);
      }
      if (!flags.keep) leaveWorkDir(home, null);
      process.stderr.write(
        `rankd: the instance ${record.jobId ? `of job ${record.jobId} ` : ''}at ${record.url} is down` +
          `${flags.keep ? `; its directory stays: ${home}` : ''}\n`,
      );
    });
}

/**
 * SIGTERM to a pod's own daemons (the pids `up --pods` recorded, if they are still daemons of
 * this instance: a pid may have been reused since), then SIGKILL.
 */
async function stopLocal(pids: readonly number[], home: string): Promise<void> {
  const ours = pids.filter((pid) => isInstanceDaemon(pid, home));
  for (const pid of ours) signal(pid, 'SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (ours.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const pid of ours.filter(alive)) signal(pid, 'SIGKILL');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // ended meanwhile
  }
}
