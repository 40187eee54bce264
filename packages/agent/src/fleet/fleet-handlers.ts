// The agent's side of fleet operations: ad-hoc commands, pings, doctor inspections, TCP
// probes, fabric probes and PTY shells, registered on the controller link. When the link drops, running
// commands and shells are ended: their output has nowhere to go, and a shell nobody
// sees must not keep running. An exec the controller cancels (its credential was revoked)
// is ended the same way.
import type { AgentMessage } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { ControllerLink } from '../link/controller-link.js';
import { IdentityResolver, type RankUserPolicy } from '../ranks/identity.js';
import { findSupervisor, type SupervisorBinary } from '../ranks/supervisor-binary.js';
import { inspectNode } from './doctor-inspect.js';
import { runExec } from './exec-runner.js';
import { PtySessions } from './pty-sessions.js';
import { endSession } from './session-signal.js';
import { listenForProbes, probeTargets } from './tcp-probe.js';
import { FabricProbes } from '../fabric/fabric-probes.js';

/** What the controller may ask of this agent beyond jobs. */
export const FLEET_CAPABILITIES = ['exec', 'ping', 'doctor', 'probe', 'pty', 'fabric'];

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

export function attachFleet(
  link: ControllerLink,
  opts: { users: RankUserPolicy; ephemeral?: boolean; log: Logger; launcher?: SupervisorBinary },
): FleetHandlers {
  const { log } = opts;
  const identities = new IdentityResolver(opts.users);
  const send = (message: AgentMessage) => link.send(message);
  // sessions of running fleet commands, and each exec by its request id (for exec.cancel)
  const sessions = new Set<number>();
  const execs = new Map<string, RunningExec>();
  // fleet commands and shells start behind the ranks' supervisor, which switches users (switched-command.ts)
  const launcher = opts.launcher ?? findSupervisor();
  const shells = new PtySessions(send, identities, launcher, log);

  link.handle('exec.run', (m) => {
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
      if (!send({ type: 'exec.result', id, ...outcome }))
        log.warn({ exec: id }, 'exec finished while the controller link is down; result dropped');
    });
  });
  link.handle('exec.cancel', (m) => {
    const exec = m.id === undefined ? undefined : execs.get(m.id);
    if (!exec || exec.cancelled !== null) return;
    exec.cancelled = m.reason;
    log.info({ exec: m.id, reason: m.reason }, 'exec cancelled by the controller: ending its session');
    if (exec.sid !== null) endSession(exec.sid, CANCEL_GRACE_MS);
  });
  link.handle('fleet.ping', (m) => send({ type: 'fleet.pong', id: m.id, agentTime: Date.now() }));
  link.handle('doctor.inspect', (m) => {
    void inspectNode(m, opts.launcher, opts.ephemeral ?? false).then((r) =>
      send({ type: 'doctor.report', id: m.id, ...r }),
    );
  });
  link.handle('probe.listen', (m) => {
    listenForProbes(m.address, m.ttlMs).then(
      (port) => send({ type: 'probe.listening', id: m.id, address: m.address, port }),
      (err: NodeJS.ErrnoException) =>
        send({
          type: 'probe.listening',
          id: m.id,
          address: m.address,
          port: null,
          error: { code: err.code ?? 'ERROR', message: err.message },
        }),
    );
  });
  link.handle('probe.connect', (m) => {
    void probeTargets(m.targets, m.timeoutMs).then((results) => send({ type: 'probe.result', id: m.id, results }));
  });
  const fabric = new FabricProbes(log);
  link.handle('fabric.serve', (m) => {
    void fabric.serve(m).then((r) => send({ ...r, id: m.id }));
  });
  link.handle('fabric.stop', (m) => fabric.stop(m.id));
  link.handle('fabric.measure', (m) => {
    void fabric.measure(m).then((r) => send({ ...r, id: m.id }));
  });
  link.handle('pty.open', (m) => void shells.open(m));
  link.handle('pty.input', (m) => shells.input(m));
  link.handle('pty.ack', (m) => shells.ack(m));
  link.handle('pty.resize', (m) => shells.resize(m));
  link.handle('pty.signal', (m) => shells.signal(m));
  link.handle('pty.close', (m) => shells.close(m));

  const onDown = (why: string) => {
    if (sessions.size > 0)
      log.warn({ commands: sessions.size, why }, 'controller link lost: ending running fleet commands');
    for (const sid of sessions) endSession(sid, LINK_LOST_GRACE_MS);
    shells.closeAll(`controller link lost: ${why}`);
    fabric.closeAll();
  };
  link.on('down', onDown);
  return {
    close() {
      link.off('down', onDown);
      onDown('agent stopping');
    },
  };
}
