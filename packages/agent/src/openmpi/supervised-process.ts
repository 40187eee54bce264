// mpirun (the launcher, on rank 0's node) and each orted (a daemon, on any node of the job)
// are no ranks, yet run as ranks do: under the rank supervisor (ranks/supervisor-binary.ts,
// as the node's ranks), in a session and process group of
// their own, in a cgroup of the job's beside its ranks', with exit.json written last in a
// directory of their own (ompi-files.ts). Here: starting one, reading how it ended with the
// tail of its output for the controller, and ending them all when the job goes.
//
// Killing is only ever by recorded identity: the supervisor's process group (its pid
// checked alive, its exit.json not yet written) and the cgroup created here. Never by name.
import fs from 'node:fs';
import path from 'node:path';
import type { OmpiDaemonState } from '@rankd/protocol';
import { createRankCgroup, killCgroup, removeCgroup } from '../ranks/cgroup.js';
import { isAlive, signalGroup } from '../ranks/proc.js';
import { files } from '../ranks/records.js';
import { readJson, type ExitRecord } from '../ranks/spool.js';
import type { SupervisorBinary } from '../ranks/supervisor-binary.js';
import { signalName, startSupervised, type SupervisorArgs } from '../ranks/supervisor.js';

const OUTPUT_TAIL_BYTES = 4096;

/** The supervisor's arguments for `argv` in `dir`, as the agent's own user (the only one --mpi openmpi runs as); `options` pin a rank. */
export function runArgs(
  supervisor: SupervisorBinary,
  dir: string,
  cgroup: string | null,
  cwd: string,
  argv: string[],
  options: string[] = [],
): SupervisorArgs {
  return { supervisor, mode: 'run', options, rankDir: dir, cgroup, userSpec: null, cwd, argv };
}

/** A launcher or daemon under its supervisor. */
export interface SupervisedProcess {
  dir: string;
  pid: number;
  supervisorPid: number;
  cgroup: string | null;
  done: boolean;
  ended: Promise<void>;
}

/** How a launcher or daemon ended, as ompi.launcher.state and ompi.daemon.state carry it. */
export type ProcessEnd = Omit<OmpiDaemonState, 'type' | 'jobId' | 'daemon' | 'host'>;

/** The job's cgroup `rankd-<jobId>.<name>` for a launcher or daemon; null without a cgroup base, or when it cannot be made. */
export function processCgroup(base: string | null, jobId: string, name: string): string | null {
  if (!base) return null;
  try {
    return createRankCgroup(base, jobId, name);
  } catch {
    return null;
  }
}

/** A launcher or daemon under its supervisor: own session and group, cgroup, subreaper, exit.json. */
export async function startSupervisedProcess(
  supervisor: SupervisorBinary,
  dir: string,
  cgroup: string | null,
  argv: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<SupervisedProcess> {
  const s = await startSupervised(runArgs(supervisor, dir, cgroup, cwd, argv), env);
  const proc: SupervisedProcess = {
    dir,
    pid: s.pid,
    supervisorPid: s.supervisorPid,
    cgroup,
    done: false,
    ended: Promise.resolve(),
  };
  proc.ended = s.ended.then(() => {
    proc.done = true;
    if (cgroup) removeCgroup(cgroup);
  });
  return proc;
}

/** Once `ended` has resolved: the exit as recorded in exit.json, with the tail of stdout and stderr. */
export function processEnd(p: SupervisedProcess): ProcessEnd {
  const rec = readJson<ExitRecord>(files.exit(p.dir));
  const output = [outputTail(p.dir, 'stdout'), outputTail(p.dir, 'stderr')]
    .filter(Boolean)
    .join('\n')
    .slice(-2 * OUTPUT_TAIL_BYTES);
  if (!rec) return { state: 'failed', message: 'ended without recording an exit status', output };
  if (rec.failed) return { state: 'failed', message: `${rec.failed.code}: ${rec.failed.message}`, output };
  return { state: 'exited', pid: p.pid, code: rec.code, signal: rec.signal ? signalName(rec.signal) : null, output };
}

/** SIGTERM to each supervised group, up to graceMs, then SIGKILL and cgroup.kill; resolves when all have ended. */
export async function endSupervisedProcesses(procs: SupervisedProcess[], graceMs: number): Promise<void> {
  const live = (p: SupervisedProcess) => !p.done && isAlive(p.supervisorPid) && !fs.existsSync(files.exit(p.dir));
  for (const p of procs) if (live(p)) signalGroup(p.pid, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<'grace'>((r) => (timer = setTimeout(() => r('grace'), graceMs)));
  const all = Promise.all(procs.map((p) => p.ended));
  const first = await Promise.race([all, grace]);
  clearTimeout(timer);
  if (first === 'grace') {
    for (const p of procs) {
      if (!live(p)) continue;
      signalGroup(p.pid, 'SIGKILL');
      if (p.cgroup) killCgroup(p.cgroup);
    }
  }
  await all;
}

/** The last OUTPUT_TAIL_BYTES of `dir`/`stream` (the supervisor's stdout or stderr file), or '' when there is none. */
export function outputTail(dir: string, stream: 'stdout' | 'stderr'): string {
  try {
    const fd = fs.openSync(path.join(dir, stream), 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const len = Math.min(size, OUTPUT_TAIL_BYTES);
      const buf = Buffer.alloc(len);
      fs.readSync(fd, buf, 0, len, size - len);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}
