// A process started inside a host's network namespace (`ip netns exec`), known by its
// pid and ended only by it.
//
// `setpriv --pdeathsig KILL ip netns exec NS PROGRAM…` execs twice, so the pid we get is
// the program's own; and the kernel kills it if the test process dies without running
// any teardown at all (SIGKILL, OOM). The ranks of a job are not covered by this: they
// run under their own supervisors, on purpose, and the tests account for them.
import { spawn, type ChildProcess } from 'node:child_process';
import { readlinkSync, statSync } from 'node:fs';
import { which } from './commands.js';
import { registerCleanup } from './teardown.js';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface NsProcess {
  readonly pid: number;
  readonly netns: string;
  readonly argv: readonly string[];
  readonly child: ChildProcess;
  /** stdout and stderr interleaved as they came (at least the last 1 MiB). */
  output(): string;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<Exit>;
  running(): boolean;
  /** Sends a signal by pid; false when it has already exited. */
  kill(signal: NodeJS.Signals): boolean;
  /** SIGTERM (or `signal`), then SIGKILL after graceMs; resolves once it has exited. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<Exit>;
}

const KEEP_BYTES = 1 << 20;
const setpriv = which('setpriv');

export function spawnInNetns(
  netns: string,
  argv: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): NsProcess {
  const wrapper = setpriv ? [setpriv, '--pdeathsig', 'KILL'] : [];
  const full = [...wrapper, 'ip', 'netns', 'exec', netns, ...argv];
  const child = spawn(full[0]!, full.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env },
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
  if (child.pid === undefined) throw new Error(`cannot start ${full.join(' ')}`);
  const pid = child.pid;
  const all = new Tail();
  const out = new Tail();
  const err = new Tail();
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    out.push(d);
    all.push(d);
  });
  child.stderr.on('data', (d: string) => {
    err.push(d);
    all.push(d);
  });
  let alive = true;
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      alive = false;
      unregister();
      resolve({ code, signal });
    }),
  );
  // the synchronous last resort for an interrupted test: by pid, never by name
  const unregister = registerCleanup(`process ${pid} in ${netns}`, () => {
    if (alive) kill(pid, 'SIGKILL');
  });

  return {
    pid,
    netns,
    argv,
    child,
    output: () => all.text(),
    stdout: () => out.text(),
    stderr: () => err.text(),
    exited,
    running: () => alive,
    kill: (signal) => alive && kill(pid, signal),
    async stop(signal = 'SIGTERM', graceMs = 5000) {
      if (!alive) return exited;
      kill(pid, signal);
      const timer = setTimeout(() => alive && kill(pid, 'SIGKILL'), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

/** The last KEEP_BYTES or more of a stream, kept in chunks: a chatty daemon costs no copying per line. */
class Tail {
  private chunks: string[] = [];
  private length = 0;

  push(s: string): void {
    this.chunks.push(s);
    this.length += s.length;
    if (this.length > 2 * KEEP_BYTES) {
      const joined = this.chunks.join('').slice(-KEEP_BYTES);
      this.chunks = [joined];
      this.length = joined.length;
    }
  }

  text(): string {
    if (this.chunks.length > 1) this.chunks = [this.chunks.join('')];
    return this.chunks[0] ?? '';
  }
}

function kill(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** The network namespace a process is in, as /proc shows it ("net:[4026532178]"), or null. */
export function netnsOfPid(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return null;
  }
}

/** The same form for a named namespace (its bind mount under /run/netns carries the inode). */
export function netnsId(netns: string): string {
  return `net:[${statSync(`/run/netns/${netns}`).ino}]`;
}
