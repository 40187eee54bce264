// The agent's side of fleet operations: ad-hoc commands, pings, doctor inspections, TCP
// probes and PTY shells, registered on the controller link. When the link drops, running
// commands and shells are ended: their output has nowhere to go, and a shell nobody
// sees must not keep running. An exec the controller cancels (its credential was revoked)
// is ended the same way.
import type { DoctorInspect, ExecCancel, ExecRun, ProbeConnect, ProbeListen, PtyAck, PtyClose, PtyInput, PtyOpen, PtyResize, PtySignal } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { ControllerLink } from '../link/controller-link.js';
import { IdentityResolver } from '../ranks/identity.js';
import { findSupervisor, type SupervisorBinary } from '../ranks/supervisor-binary.js';
import { inspectNode } from './doctor-inspect.js';
import { runExec } from './exec-runner.js';
import { PtySessions } from './pty-sessions.js';
import { endSession } from './session-signal.js';
import { listenForProbes, probeTargets } from './tcp-probe.js';

/** What the controller may ask of this agent beyond jobs. */
export const FLEET_CAPABILITIES = ['exec', 'ping', 'doctor', 'probe', 'pty'];

const LINK_LOST_GRACE_MS = 2000;
/**
 * A cancelled exec's credential was revoked: its user has lost the right to run it, so it
 * gets no more than a short SIGTERM grace before SIGKILL.
 */
const CANCEL_GRACE_MS = 500;

interface RunningExec {
  /** Its session id once it has started. */
  sid: number | null;
  /** Why it was cancelled, once it was. */
  cancelled: string | null;
}

export interface FleetHandlers {
  close(): void;
}

export function attachFleet(link: ControllerLink, opts: { allowRoot: boolean; log: Logger; launcher?: SupervisorBinary }): FleetHandlers {
  const { log } = opts;
  const identities = new IdentityResolver(opts.allowRoot);
  const send = (message: { type: string } & Record<string, unknown>) => link.send(message);
  // sessions of running fleet commands, and each exec by its request id (for exec.cancel)
  const sessions = new Set<number>();
  const execs = new Map<string, RunningExec>();
  // fleet commands and shells start behind the ranks' supervisor, which switches users (switched-command.ts)
  const launcher = opts.launcher ?? findSupervisor();
  const shells = new PtySessions(send, identities, launcher, log);

  link.handle('exec.run', (raw) => {
    const m = raw as unknown as ExecRun;
    const id = m.id;
    const exec: RunningExec = { sid: null, cancelled: null };
    if (id !== undefined) execs.set(id, exec);
    const running = (sid: number, ended: boolean) => {
      if (ended) {
        sessions.delete(sid);
        return;
      }
      sessions.add(sid);
      exec.sid = sid;
      // cancelled while it was still starting: it ends as soon as it has a session to signal
      if (exec.cancelled !== null) endSession(sid, CANCEL_GRACE_MS);
    };
    void runExec(m, identities, launcher, { running }).then((outcome) => {
      if (id !== undefined) execs.delete(id);
      if (!send({ type: 'exec.result', id, ...outcome })) log.warn({ exec: id }, 'exec finished while the controller link is down; result dropped');
    });
  });
  link.handle('exec.cancel', (raw) => {
    const m = raw as unknown as ExecCancel;
    const exec = m.id === undefined ? undefined : execs.get(m.id);
    if (!exec || exec.cancelled !== null) return;
    exec.cancelled = m.reason;
    log.info({ exec: m.id, reason: m.reason }, 'exec cancelled by the controller: ending its session');
    if (exec.sid !== null) endSession(exec.sid, CANCEL_GRACE_MS);
  });
  link.handle('fleet.ping', (raw) => send({ type: 'fleet.pong', id: (raw as { id: string }).id, agentTime: Date.now() }));
  link.handle('doctor.inspect', (raw) => {
    const m = raw as unknown as DoctorInspect;
    void inspectNode(m, opts.launcher).then((r) => send({ type: 'doctor.report', id: m.id, ...r }));
  });
  link.handle('probe.listen', (raw) => {
    const m = raw as unknown as ProbeListen;
    listenForProbes(m.address, m.ttlMs).then(
      (port) => send({ type: 'probe.listening', id: m.id, address: m.address, port }),
      (err: NodeJS.ErrnoException) => send({ type: 'probe.listening', id: m.id, address: m.address, port: null, error: { code: err.code ?? 'ERROR', message: err.message } }),
    );
  });
  link.handle('probe.connect', (raw) => {
    const m = raw as unknown as ProbeConnect;
    void probeTargets(m.targets, m.timeoutMs).then((results) => send({ type: 'probe.result', id: m.id, results }));
  });
  link.handle('pty.open', (raw) => void shells.open(raw as unknown as PtyOpen));
  link.handle('pty.input', (raw) => shells.input(raw as unknown as PtyInput));
  link.handle('pty.ack', (raw) => shells.ack(raw as unknown as PtyAck));
  link.handle('pty.resize', (raw) => shells.resize(raw as unknown as PtyResize));
  link.handle('pty.signal', (raw) => shells.signal(raw as unknown as PtySignal));
  link.handle('pty.close', (raw) => shells.close(raw as unknown as PtyClose));

  const onDown = (why: string) => {
    if (sessions.size > 0) log.warn({ commands: sessions.size, why }, 'controller link lost: ending running fleet commands');
    for (const sid of sessions) endSession(sid, LINK_LOST_GRACE_MS);
    shells.closeAll(`controller link lost: ${why}`);
  };
  link.on('down', onDown);
  return {
    close() {
      link.off('down', onDown);
      onDown('agent stopping');
    },
  };
}
