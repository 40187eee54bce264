// A rankd daemon run as a child process of `rankd up`, with its log in a file: here, or on
// the nodes of a Slurm allocation through srun (`launcher`).
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Enough of a log's end for the lines tail() shows. */
const TAIL_BYTES = 64 * 1024;

const CLI_MAIN = fileURLToPath(new URL('../main.js', import.meta.url));

export interface DaemonLaunch {
  /** argv put before `node rankd …`: srun and its options. */
  launcher?: readonly string[];
  /** Written to its standard input, which is then closed: how a secret reaches it without argv or environment. */
  stdinText?: string;
  /** Leave standard input open after stdinText, for `finishStdin`. */
  stdinOpen?: boolean;
  /** Its standard output, when a caller reads it (apart from the log, which gets stderr). */
  outFile?: string;
  /** In a session of its own and not waited for: it outlives this process (--detach). */
  detached?: boolean;
}

/** The daemons this process started that still run: what a start interrupted by a signal ends. */
const live = new Set<DaemonProcess>();

export function runningDaemons(): DaemonProcess[] {
  return [...live];
}

export class DaemonProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private running = true;
  private readonly logReader: number;
  /** Its exit code once it exited (null while it runs, or when a signal ended it). */
  exitCode: number | null = null;

  constructor(
    readonly label: string,
    args: readonly string[],
    readonly logFile: string,
    /** Added to this process's environment: how a secret reaches the child without being in its argv. */
    env: Readonly<Record<string, string>> = {},
    launch: DaemonLaunch = {},
  ) {
    const fd = openSync(logFile, 'a', 0o600);
    // kept open for tail(): a daemon that fails to start may remove the instance directory, its log with it
    this.logReader = openSync(logFile, 'r');
    // truncated: what a daemon of an earlier start printed there is not this one's answer
    const out = launch.outFile ? openSync(launch.outFile, 'w', 0o600) : fd;
    const argv = [...(launch.launcher ?? []), process.execPath, CLI_MAIN, ...args];
    // stdout/stderr to the log: the terminal stays for rankd's own output
    this.child = spawn(argv[0]!, argv.slice(1), {
      stdio: [launch.stdinText === undefined ? 'ignore' : 'pipe', out, fd],
      env: { ...process.env, ...env },
      detached: launch.detached ?? false,
    });
    closeSync(fd);
    if (out !== fd) closeSync(out);
    live.add(this);
    if (launch.stdinText !== undefined && launch.stdinOpen) this.child.stdin!.write(launch.stdinText);
    else if (launch.stdinText !== undefined) this.child.stdin!.end(launch.stdinText);
    if (launch.detached) this.child.unref();
    this.exited = new Promise((resolve) => {
      const ended = (code: number | null, signal: NodeJS.Signals | null) => {
        live.delete(this);
        this.running = false;
        this.exitCode = code;
        resolve({ code, signal });
      };
      this.child.once('exit', ended);
      // it never ran (srun not on the PATH): said in its log, where tail() shows it, as a shell's 127
      this.child.once('error', (err) => {
        appendFileSync(logFile, `rankd: cannot run ${argv[0]}: ${err.message}\n`);
        ended(127, null);
      });
    });
  }

  /** Writes the rest of its standard input and closes it. */
  finishStdin(text: string): void {
    this.child.stdin?.end(text);
  }

  get alive(): boolean {
    return this.running;
  }

  /** SIGTERM, then SIGKILL after graceMs; only ever this child's own pid. */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** The last lines of the log, to explain an early exit (read from the open log, which may be unlinked by now). */
  tail(lines = 15): string {
    try {
      const size = fstatSync(this.logReader).size;
      const start = Math.max(0, size - TAIL_BYTES);
      const bytes = Buffer.alloc(size - start);
      readSync(this.logReader, bytes, 0, bytes.length, start);
      return bytes.toString('utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }
}
