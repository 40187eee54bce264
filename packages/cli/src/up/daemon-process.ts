// A rankd daemon run as a child process of `rankd up`, with its log in a file.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync, closeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const CLI_MAIN = fileURLToPath(new URL('../main.js', import.meta.url));

export class DaemonProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private running = true;
  /** Its exit code once it exited (null while it runs, or when a signal ended it). */
  exitCode: number | null = null;

  constructor(
    readonly label: string,
    args: readonly string[],
    readonly logFile: string,
    /** Added to this process's environment: how a secret reaches the child without being in its argv. */
    env: Readonly<Record<string, string>> = {},
  ) {
    const fd = openSync(logFile, 'a', 0o600);
    // stdin ignored, stdout/stderr to the log: the terminal stays for rankd's own output
    this.child = spawn(process.execPath, [CLI_MAIN, ...args], {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, ...env },
    });
    closeSync(fd);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.running = false;
        this.exitCode = code;
        resolve({ code, signal });
      });
    });
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

  /** The last lines of the log, to explain an early exit. */
  tail(lines = 15): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }
}
