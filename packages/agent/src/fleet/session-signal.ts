// Signals every process of a session. Fleet commands and shells start as session
// leaders (setsid), so their session holds everything they started, also the jobs an
// interactive shell put in process groups of their own — unless a program left the
// session on purpose (setsid, a daemon), which is its user's intent.
import fs from 'node:fs';
import { readProcStat } from '../ranks/proc.js';

/** Sends `signal` to every process whose session id is `sid`; returns how many it reached. */
export function signalSession(sid: number, signal: NodeJS.Signals): number {
  if (!Number.isInteger(sid) || sid <= 1) return 0;
  let reached = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const st = readProcStat(Number(entry));
    if (!st || st.session !== sid || st.state === 'Z') continue;
    try {
      process.kill(Number(entry), signal);
      reached++;
    } catch {
      // gone in the meantime
    }
  }
  return reached;
}

/** SIGTERM (or `first`) now, SIGKILL after `graceMs` to whatever is left of the session. */
export function endSession(sid: number, graceMs: number, first: NodeJS.Signals = 'SIGTERM'): void {
  if (signalSession(sid, first) === 0) return;
  setTimeout(() => signalSession(sid, 'SIGKILL'), graceMs).unref();
}
