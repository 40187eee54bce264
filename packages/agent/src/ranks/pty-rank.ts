// Ranks that need a terminal (`--pty`). node-pty is the parent here, so the agent itself
// plays the supervisor: it copies the terminal's output into the spool's stdout file
// (a terminal has one stream: stderr stays empty) and writes exit.json from node-pty's exit.
//
// PTY ranks do not survive an agent restart: the terminal's master side lives in the
// agent, and when it closes the rank gets SIGHUP and its output has nowhere to go. A
// restarted agent ends what is left of such a rank and reports it as unknown.
//
// The terminal is held open past the exit until its output has gone quiet (pty-drain.ts):
// exit.json is written only after the last byte is in the file.
import fs from 'node:fs';
import path from 'node:path';
import type * as Pty from 'node-pty';
import { cgroupPopulated, killCgroup, removeCgroup } from './cgroup.js';
import { keepLastOutput } from './pty-drain.js';
import { groupExists, signalGroup } from './proc.js';
import { writeJsonAtomic, type ExitRecord, type RankRecord } from './spool.js';
import { HELPER_ENV, writeEnvFile } from './caller-env.js';
import { supervisorArgv, type SupervisorArgs } from './supervisor.js';

const DRAIN_LIMIT_MS = 6000;
/** The TERM node-pty gives the supervisor, and the rank unless its job sets one. */
const DEFAULT_TERM = 'xterm-256color';

export interface PtyStart {
  pid: number;
  /** Resolves once exit.json is written. */
  ended: Promise<void>;
}

/**
 * Starts the rank under a pseudo-terminal; the supervisor runs in exec mode in
 * front of it. node-pty is loaded on the first PTY rank, so that a node without a working
 * native build still runs every other rank.
 */
export async function startPtyRank(
  a: SupervisorArgs,
  env: Record<string, string>,
  cols = 80,
  rows = 24,
): Promise<PtyStart> {
  const pty = await import('node-pty');
  const argv = supervisorArgv(a);
  // The supervisor in front of the rank starts as root with the agent's fixed environment;
  // the rank's (with the terminal's TERM unless the job set one) waits in a 0600 file that
  // the supervisor reads and installs only in the program's exec, after the switch of user.
  writeEnvFile(a.rankDir, { TERM: DEFAULT_TERM, ...env });
  const out = fs.openSync(path.join(a.rankDir, 'stdout'), 'w', 0o600);
  fs.closeSync(fs.openSync(path.join(a.rankDir, 'stderr'), 'w', 0o600));
  let term: Pty.IPty;
  try {
    term = pty.spawn(argv[0]!, argv.slice(1), {
      name: DEFAULT_TERM,
      cols,
      rows,
      cwd: '/',
      env: { ...HELPER_ENV },
      encoding: null,
    });
  } catch (err) {
    fs.closeSync(out);
    // no supervisor will read it: the job's values leave the disk now
    fs.rmSync(path.join(a.rankDir, 'env'), { force: true });
    throw err;
  }
  const record: RankRecord = {
    pid: term.pid,
    pgid: term.pid,
    supervisorPid: null,
    supervisorStartTicks: null,
    cgroup: a.cgroup,
    pty: true,
  };
  writeJsonAtomic(path.join(a.rankDir, 'rank.json'), record);
  let lastOutput = Date.now();
  let markDrained!: () => void;
  const drained = new Promise<void>((resolve) => (markDrained = resolve));
  // without node-pty's internals the terminal behaves as node-pty alone does: its last KB may be cut
  if (!keepLastOutput(term, (quietMs) => Date.now() - lastOutput >= quietMs, markDrained)) markDrained();
  // synchronous appends keep the bytes in order and on disk before the exit record
  term.onData((data: string | Buffer) => {
    lastOutput = Date.now();
    fs.writeSync(out, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  });
  const ended = new Promise<void>((resolve) => {
    term.onExit(({ exitCode, signal }) => {
      // bounded, should node-pty never destroy its reader: the drain itself stops at 5 s
      const drainedOrLate = Promise.race([drained, new Promise<void>((r) => setTimeout(r, DRAIN_LIMIT_MS).unref())]);
      void drainedOrLate
        .then(() => endGroup(term.pid, a.cgroup))
        .then((clean) => {
          fs.closeSync(out);
          const rec: ExitRecord = signal
            ? { code: null, signal, leftover: !clean }
            : { code: exitCode, signal: null, leftover: !clean };
          writeJsonAtomic(path.join(a.rankDir, 'exit.json'), rec);
          resolve();
        });
    });
  });
  return { pid: term.pid, ended };
}

/** As the supervisor does: SIGKILL what the leader left in its group and cgroup, wait until empty. */
export async function endGroup(pgid: number, cgroup: string | null): Promise<boolean> {
  let delay = 1;
  for (let waited = 0; ; waited += delay, delay = Math.min(delay * 2, 50)) {
    const group = groupExists(pgid);
    const populated = cgroup !== null && cgroupPopulated(cgroup);
    if (!group && !populated) {
      if (cgroup) removeCgroup(cgroup);
      return true;
    }
    if (waited > 10_000) return false;
    if (group) signalGroup(pgid, 'SIGKILL');
    if (populated) killCgroup(cgroup);
    await new Promise((r) => setTimeout(r, delay));
  }
}
