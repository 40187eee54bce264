// Keeps the last bytes of a terminal. When the program on a PTY exits, Linux hangs the
// terminal up: the master side reads EIO, and whatever the program wrote last but was not
// read yet is gone (node-pty #72, #726; `seq 1 300000` shows it, losing its last output). And
// node-pty destroys its reader 200 ms after the exit whether or not it has read everything.
//
// So the agent, as script(1) and sshd do, holds the slave side open itself (no hangup
// while it does) and lets node-pty destroy its reader only once the output has gone quiet;
// then it lets go of the slave. This reaches into two private fields of node-pty 1.x
// (`_pty`, the slave's path, and `_socket`, the master's reader); without them it does
// nothing and the terminal behaves as node-pty alone would.
import fs from 'node:fs';
import type * as Pty from 'node-pty';

/** The output must be quiet this long after the exit before the reader is destroyed… */
const QUIET_MS = 50;
/** …but not longer than this: a background job may keep writing to the terminal forever. */
const MAX_DRAIN_MS = 5000;

/**
 * Returns false when node-pty's internals are not as expected (nothing was changed).
 * `onDrained` runs once the reader is really destroyed: every byte has been delivered.
 */
export function keepLastOutput(term: Pty.IPty, isQuiet: (quietMs: number) => boolean, onDrained?: () => void): boolean {
  const inner = term as unknown as { _pty?: unknown; _socket?: { destroy?: (...args: unknown[]) => unknown } };
  const socket = inner._socket;
  if (typeof inner._pty !== 'string' || !socket || typeof socket.destroy !== 'function') return false;
  let slave: number;
  try {
    slave = fs.openSync(inner._pty, fs.constants.O_RDWR | fs.constants.O_NOCTTY);
  } catch {
    return false;
  }
  const destroy = socket.destroy.bind(socket);
  let pending = false;
  socket.destroy = (...args: unknown[]) => {
    if (pending) return socket;
    pending = true;
    const deadline = Date.now() + MAX_DRAIN_MS;
    const attempt = () => {
      if (!isQuiet(QUIET_MS) && Date.now() < deadline) {
        setTimeout(attempt, QUIET_MS / 2);
        return;
      }
      try {
        fs.closeSync(slave);
      } catch {
        // already closed
      }
      destroy(...args);
      onDrained?.();
    };
    attempt();
    return socket;
  };
  return true;
}
