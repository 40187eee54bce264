// Interactive PTY sessions for `rankd shell`: a program (the user's login shell unless
// told) on a new terminal, its output streamed to the controller, keystrokes, resizes and
// signals passed in, and its exit status reported after its last output.
//
// Output is flow-controlled: past WINDOW unacknowledged bytes the terminal is paused
// (the program blocks on write) until the controller acknowledges what reached the client.
// When the session is closed — the client left, or the link to the controller dropped —
// the terminal is hung up: SIGHUP to the whole session, SIGKILL after a grace period.
import type * as Pty from 'node-pty';
import {
  FleetErrorCode,
  type AgentMessage,
  type PtyAck,
  type PtyClose,
  type PtyInput,
  type PtyOpen,
  type PtyResize,
  type PtySignal,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { IdentityResolver } from '../ranks/identity.js';
import type { SupervisorBinary } from '../ranks/supervisor-binary.js';
import { signalName } from './exec-runner.js';
import { baseEnv, defaultCwd, resolveIdentity } from './identity.js';
import { switchedCommand, type SwitchedCommand } from './switched-command.js';
import { keepLastOutput } from '../ranks/pty-drain.js';
import { isAlive } from '../ranks/proc.js';
import { endSession, signalSession } from './session-signal.js';

type Send = (message: AgentMessage) => boolean;

interface Session {
  term: Pty.IPty;
  unacked: number;
  paused: boolean;
  closing: boolean;
  /** While paused: watches for the program's exit (see pause()). */
  exitWatch: NodeJS.Timeout | null;
  /** The program is gone: read what is left, never pause again. */
  draining: boolean;
  lastOutput: number;
}

interface Opening {
  input: Buffer[];
  size: { cols: number; rows: number } | null;
  closed: boolean;
}

/** Unacknowledged output bytes before the terminal is paused, and the level it resumes at. */
const WINDOW = 1024 * 1024;
const RESUME_BELOW = 256 * 1024;
const HANGUP_GRACE_MS = 2000;
/**
 * node-pty destroys a terminal whose reader has not seen its end 200 ms after the program
 * exits, and the bytes still in it are lost. A paused terminal is such a reader, so while
 * paused the program is watched well inside that window, and the terminal resumed when it ends.
 */
const EXIT_WATCH_MS = 25;
/** Largest output frame: well under the frame cap once base64'd. */
const OUTPUT_CHUNK = 192 * 1024;
/** The TERM node-pty gives the supervisor (as root); the program gets the client's. */
const SUPERVISOR_TERM = 'xterm-256color';

export class PtySessions {
  private readonly sessions = new Map<string, Session>();
  private readonly opening = new Map<string, Opening>();

  constructor(
    private readonly send: Send,
    private readonly identities: IdentityResolver,
    private readonly launcher: SupervisorBinary,
    private readonly log: Logger,
  ) {}

  async open(m: PtyOpen): Promise<void> {
    if (this.sessions.has(m.id) || this.opening.has(m.id)) return;
    // frames that arrive while node-pty loads and the user is resolved wait here
    const early: Opening = { input: [], size: null, closed: false };
    this.opening.set(m.id, early);
    const fail = (code: string, message: string) => {
      this.opening.delete(m.id);
      this.send({ type: 'pty.exit', id: m.id, code: null, signal: null, error: { code, message } });
    };
    let pty: typeof Pty;
    let id;
    try {
      pty = await import('node-pty');
      id = await resolveIdentity(this.identities, m.user);
    } catch (err) {
      const code = (err as { code?: string }).code;
      return fail(code?.startsWith('RANKD_') ? code : FleetErrorCode.PtySpawn, (err as Error).message);
    }
    this.opening.delete(m.id);
    if (early.closed) return;
    const argv = m.argv ?? [id.shell, '-l'];
    let term: Pty.IPty;
    let command: SwitchedCommand | undefined;
    try {
      // the caller's TERM, like the rest of the program's environment, is installed only after the switch
      command = switchedCommand(this.launcher, id, m.cwd ?? defaultCwd(id), argv, baseEnv(id, { TERM: m.term }));
      term = pty.spawn(command.argv[0]!, command.argv.slice(1), {
        name: SUPERVISOR_TERM,
        cols: m.cols,
        rows: m.rows,
        cwd: '/',
        env: command.env,
        encoding: null,
      });
    } catch (err) {
      command?.cleanup();
      return fail(FleetErrorCode.PtySpawn, `cannot start ${argv[0]}: ${(err as Error).message}`);
    }
    const cleanup = command.cleanup;
    const s: Session = {
      term,
      unacked: 0,
      paused: false,
      closing: false,
      exitWatch: null,
      draining: false,
      lastOutput: Date.now(),
    };
    if (!keepLastOutput(term, (quietMs) => !s.paused && Date.now() - s.lastOutput >= quietMs)) {
      this.log.warn({ session: m.id }, 'cannot hold the terminal open: its last output may be cut at exit');
    }
    this.sessions.set(m.id, s);
    this.log.info(
      { session: m.id, pid: term.pid, argv: m.argv ?? [id.shell, '-l'], user: id.name },
      'shell session started',
    );
    this.send({ type: 'pty.opened', id: m.id, pid: term.pid });
    if (early.size) term.resize(early.size.cols, early.size.rows);
    for (const chunk of early.input) term.write(chunk);
    term.onData((data: string | Buffer) => {
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      s.lastOutput = Date.now();
      for (let at = 0; at < bytes.length; at += OUTPUT_CHUNK) {
        this.send({ type: 'pty.output', id: m.id, data: bytes.subarray(at, at + OUTPUT_CHUNK).toString('base64') });
      }
      s.unacked += bytes.length;
      if (!s.paused && !s.draining && s.unacked > WINDOW) this.pause(s);
    });
    term.onExit(({ exitCode, signal }) => {
      cleanup();
      this.sessions.delete(m.id);
      this.resume(s);
      // what the program left behind in its session goes with it
      endSession(term.pid, HANGUP_GRACE_MS, 'SIGHUP');
      const name = signal ? signalName(signal) : null;
      this.send({ type: 'pty.exit', id: m.id, code: name ? null : exitCode, signal: name });
      this.log.info({ session: m.id, code: exitCode, signal: name }, 'shell session ended');
    });
  }

  input(m: PtyInput): void {
    const data = Buffer.from(m.data, 'base64');
    const early = this.opening.get(m.id);
    if (early) early.input.push(data);
    else this.sessions.get(m.id)?.term.write(data);
  }

  ack(m: PtyAck): void {
    const s = this.sessions.get(m.id);
    if (!s) return;
    s.unacked = Math.max(0, s.unacked - m.bytes);
    if (s.paused && s.unacked < RESUME_BELOW) this.resume(s);
  }

  private pause(s: Session): void {
    s.paused = true;
    s.term.pause();
    s.exitWatch = setInterval(() => {
      if (isAlive(s.term.pid)) return;
      s.draining = true;
      this.resume(s);
    }, EXIT_WATCH_MS);
  }

  private resume(s: Session): void {
    if (s.exitWatch) clearInterval(s.exitWatch);
    s.exitWatch = null;
    if (!s.paused) return;
    s.paused = false;
    s.term.resume();
  }

  resize(m: PtyResize): void {
    const early = this.opening.get(m.id);
    if (early) early.size = { cols: m.cols, rows: m.rows };
    const s = this.sessions.get(m.id);
    try {
      s?.term.resize(m.cols, m.rows);
    } catch {
      // the terminal closed between the frame and now
    }
  }

  /** A signal for the session's process group (the shell and what it runs in the foreground of it). */
  signal(m: PtySignal): void {
    const s = this.sessions.get(m.id);
    if (!s) return;
    try {
      process.kill(-s.term.pid, m.signal);
    } catch {
      // the group is gone, or the name is not a signal here
    }
  }

  close(m: PtyClose): void {
    this.hangUp(m.id, m.reason);
  }

  /** The link to the controller is gone: nobody can see these terminals any more. */
  closeAll(reason: string): void {
    for (const id of [...this.sessions.keys()]) this.hangUp(id, reason);
  }

  private hangUp(id: string, reason: string): void {
    const early = this.opening.get(id);
    if (early) early.closed = true;
    const s = this.sessions.get(id);
    if (!s || s.closing) return;
    s.closing = true;
    this.log.info({ session: id, pid: s.term.pid, reason }, 'hanging up shell session');
    // a paused terminal would keep a dying program blocked on write
    s.draining = true;
    this.resume(s);
    signalSession(s.term.pid, 'SIGHUP');
    // SIGCONT lets stopped jobs see the hangup; whatever ignores it is killed after the grace
    endSession(s.term.pid, HANGUP_GRACE_MS, 'SIGCONT');
  }
}
