// One ad-hoc command: argv in a new session, stdin from /dev/null, the first N bytes of
// each stream kept (the rest counted), a timeout that ends the whole session (SIGTERM,
// then SIGKILL), and the exit reported once.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { constants } from 'node:os';
import { ErrorCode, FleetErrorCode, RankdError, type ExecRun } from '@rankd/protocol';
import { refuseLoaderEnvForRoot } from '../ranks/caller-env.js';
import { shellStatusOf } from '../ranks/errors.js';
import type { IdentityResolver } from '../ranks/identity.js';
import type { SupervisorBinary } from '../ranks/supervisor-binary.js';
import { resolveProgram } from '../ranks/program.js';
import { baseEnv, defaultCwd, resolveIdentity } from './identity.js';
import { switchedCommand, type SwitchedCommand } from './switched-command.js';
import { endSession } from './session-signal.js';

export type ExecOutcome = {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutBytes: number;
  stderrBytes: number;
  durationMs: number;
  timedOut: boolean;
  error?: { code: string; message: string };
};

/** Between SIGTERM and SIGKILL at a timeout. */
const KILL_GRACE_MS = 2000;
/** After the exit, how long stdout/stderr may stay open (a background child holding them). */
const DRAIN_MS = 1000;

/** A bounded buffer: keeps the first `cap` bytes, counts all. */
class Capture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  total = 0;
  constructor(private readonly cap: number) {}
  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.kept >= this.cap) return;
    const part = chunk.subarray(0, this.cap - this.kept);
    this.chunks.push(part);
    this.kept += part.length;
  }
  base64(): string {
    return Buffer.concat(this.chunks).toString('base64');
  }
}

export interface ExecHooks {
  /** Called with the session id once the command runs, and with null when it ended. */
  running(sid: number, ended: boolean): void;
}

export async function runExec(
  m: ExecRun,
  identities: IdentityResolver,
  launcher: SupervisorBinary,
  hooks: ExecHooks,
): Promise<ExecOutcome> {
  const started = performance.now();
  const failed = (code: string, message: string, status: number | null = null): ExecOutcome => ({
    code: status,
    signal: null,
    stdout: '',
    stderr: '',
    stdoutBytes: 0,
    stderrBytes: 0,
    durationMs: performance.now() - started,
    timedOut: false,
    error: { code, message },
  });
  let id;
  try {
    id = await resolveIdentity(identities, m.user);
  } catch (err) {
    return failed((err as RankdError).code ?? FleetErrorCode.ExecUser, (err as Error).message);
  }
  const cwd = m.cwd ?? defaultCwd(id);
  try {
    if (!fs.statSync(cwd).isDirectory()) return failed(FleetErrorCode.ExecSpawn, `cwd ${cwd} is not a directory`);
  } catch (err) {
    return failed(
      FleetErrorCode.ExecSpawn,
      `cwd ${cwd}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const env = baseEnv(id, m.env);
  let command: SwitchedCommand;
  try {
    // a root target never drops privileges: nothing may act in its loader (caller-env.ts)
    refuseLoaderEnvForRoot(m.env ?? {}, id.uid, 'the command');
    // found as execvp will find it, so that a missing program is this error, not the supervisor's exit 127
    resolveProgram(m.argv[0]!, env.PATH, cwd, id);
    command = switchedCommand(launcher, id, cwd, m.argv, env);
  } catch (e) {
    const code = (e as RankdError).code;
    if (code === ErrorCode.RootLoaderEnv) return failed(code, (e as Error).message);
    // rc is what a shell reports for it: 127 for no such program, 126 for one that cannot be executed
    const status = shellStatusOf(code);
    // a program a shell would not run says so in the shell's words (`foo: command not found`)
    return failed(
      FleetErrorCode.ExecSpawn,
      status === null ? `cannot run "${m.argv[0]}": ${(e as Error).message}` : (e as Error).message,
      status,
    );
  }
  const argv = command.argv;
  const out = new Capture(m.maxOutputBytes);
  const err = new Capture(m.maxOutputBytes);

  return new Promise<ExecOutcome>((resolve) => {
    let timedOut = false;
    let done = false;
    let drain: NodeJS.Timeout | null = null;
    let child: ChildProcess;
    try {
      child = spawn(argv[0]!, argv.slice(1), {
        cwd: '/',
        env: command.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (e) {
      command.cleanup();
      resolve(failed(FleetErrorCode.ExecSpawn, `cannot run "${m.argv[0]}": ${(e as Error).message}`));
      return;
    }
    const sid = child.pid ?? 0;
    if (sid) hooks.running(sid, false);
    child.stdout!.on('data', (d: Buffer) => out.push(d));
    child.stderr!.on('data', (d: Buffer) => err.push(d));
    const timer = setTimeout(() => {
      timedOut = true;
      endSession(sid, KILL_GRACE_MS);
    }, m.timeoutMs);

    const finish = (code: number | null, signal: NodeJS.Signals | null, error?: { code: string; message: string }) => {
      if (done) return;
      done = true;
      command.cleanup();
      clearTimeout(timer);
      if (drain) clearTimeout(drain);
      if (sid) hooks.running(sid, true);
      resolve({
        code,
        signal,
        stdout: out.base64(),
        stderr: err.base64(),
        stdoutBytes: out.total,
        stderrBytes: err.total,
        durationMs: performance.now() - started,
        timedOut,
        ...(error ? { error } : {}),
      });
    };

    child.once('error', (e: NodeJS.ErrnoException) => {
      // spawn failures (ENOENT, EACCES) come here instead of an exit
      const why =
        e.code === 'ENOENT' ? 'no such program on PATH' : e.code === 'EACCES' ? 'permission denied' : e.message;
      finish(null, null, { code: FleetErrorCode.ExecSpawn, message: `cannot run "${m.argv[0]}": ${why}` });
    });
    child.once('exit', (code, signal) => {
      // wait for the pipes to drain, but not for a background child that keeps them open
      let open = 2;
      const closed = () => --open === 0 && finish(code, signal);
      drain = setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
        finish(code, signal);
      }, DRAIN_MS);
      for (const s of [child.stdout!, child.stderr!]) {
        if (s.readableEnded || s.destroyed) closed();
        else s.once('close', closed);
      }
    });
  });
}

/** Signal name for a number node-pty or a wait status gives. */
export function signalName(n: number): string | null {
  for (const [name, value] of Object.entries(constants.signals)) if (value === n) return name;
  return null;
}
