// Starting a rank under its supervisor (the native rank-supervisor: supervisor-binary.ts)
// and reading its one-line answer.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import os from 'node:os';
import { RankErrorCode, rankError } from './errors.js';
import { encodeEnv, HELPER_ENV } from './caller-env.js';
import type { RankIdentity } from './identity.js';
import { assertSupervisorUsable, type SupervisorBinary } from './supervisor-binary.js';

export interface SupervisorArgs {
  supervisor: SupervisorBinary;
  mode: 'run' | 'exec';
  /** --cpus/--mems of the plan (preflight.ts, pinOptions); empty when nothing is planned. */
  options: string[];
  rankDir: string;
  cgroup: string | null;
  /** uid:gid:g1,g2 when the user must be switched. */
  userSpec: string | null;
  cwd: string;
  /** The program's argv, exec'd by the supervisor's child. */
  argv: string[];
}

/** The supervisor's uid:gid:g1,g2 for `identity`, or null when it keeps the agent's user (no groups: the supervisor takes the gid alone). */
export function userSpecOf(identity: Pick<RankIdentity, 'switchUser' | 'uid' | 'gid' | 'groups'>): string | null {
  return identity.switchUser ? `${identity.uid}:${identity.gid}:${identity.groups.join(',')}` : null;
}

/**
 * The supervisor's argv, which is also its /proc cmdline while its child has not exec'd yet.
 * Every start path goes through here, so a node without a working supervisor refuses here.
 */
export function supervisorArgv(a: SupervisorArgs): string[] {
  assertSupervisorUsable(a.supervisor);
  return [
    a.supervisor.path,
    a.mode,
    ...a.options,
    a.rankDir,
    a.cgroup ?? '-',
    a.userSpec ?? '-',
    a.cwd,
    '--',
    ...a.argv,
  ];
}

export interface SupervisedStart {
  child: ChildProcess;
  pid: number;
  supervisorPid: number;
  /** Resolves when the supervisor has exited, which it does only after writing exit.json. */
  ended: Promise<void>;
  /** The agent's end of the socket the rank holds at PASS_FD, when one was asked for. */
  passedSocket?: Socket;
  /** The agent's end of the rank's stdin, when one was asked for: what is written there, the rank reads. */
  stdinSocket?: Socket;
}

/** The descriptor a passed socket (PMI_FD) sits on in the rank: the first after stdio. */
export const PASS_FD = 3;
/** The descriptor the rank's stdin arrives on in the supervisor, which makes it the rank's fd 0. */
export const STDIN_FD = 4;

/**
 * Spawns the supervisor in its own session and resolves once the rank has exec'd its first
 * program. The environment travels on the supervisor's stdin, not in its own environment,
 * so nothing of the job's environment (LC_ALL, LD_PRELOAD, …) affects the supervisor.
 */
export function startSupervised(
  a: SupervisorArgs,
  env: Record<string, string>,
  passSocket = false,
  stdin = false,
): Promise<SupervisedStart> {
  const argv = supervisorArgv(a);
  // a 'pipe' beyond stdio is a socketpair: the rank inherits one end at PASS_FD, through the
  // supervisor, which closes its own copy so that the agent sees EOF when the rank is gone.
  // The rank's stdin is another, at STDIN_FD, which the supervisor makes the rank's fd 0.
  // stderr is read only until the supervisor moves it to supervisor.log, its first step:
  // what comes before is a usage error, which the agent should not have to guess.
  const stdio: Array<'pipe' | 'ignore'> = ['pipe', 'pipe', 'pipe'];
  if (passSocket || stdin) stdio.push(passSocket ? 'pipe' : 'ignore');
  if (stdin) stdio.push('pipe');
  const child = spawn(argv[0]!, argv.slice(1), {
    detached: true,
    stdio,
    cwd: '/',
    env: {
      ...HELPER_ENV,
      ...(passSocket ? { RANKD_PASS_FD: String(PASS_FD) } : {}),
      ...(stdin ? { RANKD_STDIN_FD: String(STDIN_FD) } : {}),
    },
  });
  // listened for from the spawn on, so that a rank that ends at once is never missed
  const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let answer = '';
    let complaint = '';
    let settled = false;
    const settle = (err: Error | null, pid?: number): void => {
      if (settled) return;
      settled = true;
      child.stdout!.removeAllListeners('data');
      child.stdout!.destroy();
      const passed = passSocket ? (child.stdio[PASS_FD] as Socket) : undefined;
      const input = stdin ? (child.stdio[STDIN_FD] as Socket) : undefined;
      if (err) {
        passed?.destroy();
        input?.destroy();
        reject(err);
      } else
        resolve({
          child,
          pid: pid!,
          supervisorPid: child.pid!,
          ended,
          ...(passed ? { passedSocket: passed } : {}),
          ...(input ? { stdinSocket: input } : {}),
        });
    };
    child.once('error', (err) =>
      settle(rankError(RankErrorCode.SpawnFailed, `cannot start the supervisor: ${err.message}`)),
    );
    // 'close' comes after the exit and after stdout has delivered everything, so an answer
    // that raced the exit has been seen by then
    child.once('close', (code, signal) => {
      const said = complaint.trim().split('\n')[0];
      settle(
        rankError(
          RankErrorCode.SpawnFailed,
          `the supervisor ended before the rank started (${signal ?? `exit ${code}`})${said ? `: ${said}` : ''}; see ${a.rankDir}/supervisor.log`,
        ),
      );
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      if (complaint.length < 4096) complaint += chunk;
    });
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      answer += chunk;
      const nl = answer.indexOf('\n');
      if (nl < 0) return;
      const line = answer.slice(0, nl);
      const started = /^started (\d+)$/.exec(line);
      if (started) return settle(null, Number(started[1]));
      const failed = /^failed (\S+) ?(.*)$/.exec(line);
      if (failed) return settle(rankError(failed[1] as RankErrorCode, failed[2] ?? 'failed', { rankDir: a.rankDir }));
      settle(rankError(RankErrorCode.SpawnFailed, `unexpected answer from the supervisor: ${line}`));
    });
    child.stdin!.on('error', () => {
      // EPIPE when the supervisor died early; its exit reports why
    });
    child.stdin!.end(encodeEnv(env));
  });
}

/** Signal number → name ("SIGKILL"), from Node's table of this platform's signals. */
export function signalName(signo: number): string {
  for (const [name, n] of Object.entries(os.constants.signals)) if (n === signo) return name;
  return `SIG${signo}`;
}
