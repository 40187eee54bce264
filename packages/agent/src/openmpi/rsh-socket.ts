// The launcher node's end of rankd's rsh helper (`rank-supervisor rsh`, native/rsh.c,
// mpirun's `--mca plm_rsh_agent`): a Unix socket per job in the spool. Each connection is one daemon
// mpirun asks for: one line in, `HOST\tARG\tARG…` (mpirun's arguments to its remote shell,
// one by one), parsed into the launch's values and handed on (as ompi.daemon.request, by the
// caller) to the controller, which has HOST's agent start the daemon; lines back as the controller
// relays what became of that daemon: `started PID`, then `exit CODE` or `failed MESSAGE`.
// The helper exits with that code, as ssh would, and mpirun reads it as the daemon's.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { parseOrtedRequest, type OmpiDaemonState, type OrtedLaunch } from '@rankd/protocol';

/** A daemon mpirun asks for: the helper's number for it, the host, and the values of its launch (never a command). */
export interface DaemonRequest {
  daemon: number;
  host: string;
  orted: OrtedLaunch;
}

export interface RshSocketHooks {
  /** Why the job is ending, or null: no daemon is asked for any more once it is. */
  ending: () => string | null;
  request: (r: DaemonRequest) => void;
}

export class RshSocket {
  private readonly server: net.Server;
  /** The rsh helpers waiting for their daemon, by daemon id. */
  private readonly helpers = new Map<number, net.Socket>();
  private nextDaemon = 0;

  private constructor(private readonly hooks: RshSocketHooks) {
    this.server = net.createServer((conn) => this.onHelper(conn));
  }

  /** The job's socket for the rsh helper: in the spool (mode 0700, the agent's user, who is the job's). */
  static open(socket: string, hooks: RshSocketHooks): Promise<RshSocket> {
    const rsh = new RshSocket(hooks);
    const { server } = rsh;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(socket, () => {
        fs.chmodSync(socket, 0o600);
        resolve(rsh);
      });
    });
  }

  /** No daemon may be asked for any more; helpers already waiting keep their connection. */
  close(): void {
    this.server.close();
  }

  /** The job is ending: every waiting helper is told so, and fails. */
  endAll(reason: string): void {
    for (const conn of this.helpers.values()) conn.end(`failed the job is ending: ${reason}\n`);
  }

  /** The controller relays what became of a daemon mpirun asked for: tell its rsh helper. */
  daemonState(m: OmpiDaemonState): void {
    const conn = this.helpers.get(m.daemon);
    if (!conn) return;
    if (m.state === 'started') conn.write(`started ${m.pid ?? 0}\n`);
    else if (m.state === 'failed')
      conn.end(`failed ${(m.message ?? 'the daemon could not run').replace(/\n/g, ' ')}\n`);
    else conn.end(`exit ${m.code ?? (m.signal ? 128 + (signalNumber(m.signal) ?? 0) : 255)}\n`);
  }

  private onHelper(conn: net.Socket): void {
    let buf = '';
    conn.setEncoding('utf8');
    conn.on('error', () => conn.destroy());
    conn.on('data', (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) {
        if (buf.length > 70_000) conn.end('failed request too long\n');
        return;
      }
      const line = buf.slice(0, nl);
      buf = '';
      conn.removeAllListeners('data');
      const [host, ...args] = line.split('\t');
      if (!host || args.length === 0) return void conn.end('failed malformed request\n');
      let orted: OrtedLaunch;
      try {
        orted = parseOrtedRequest(args);
      } catch (err) {
        return void conn.end(`failed ${(err as Error).message.replace(/\n/g, ' ')}\n`);
      }
      const ending = this.hooks.ending();
      if (ending) return void conn.end(`failed the job is ending: ${ending}\n`);
      const daemon = this.nextDaemon++;
      this.helpers.set(daemon, conn);
      conn.on('close', () => this.helpers.delete(daemon));
      this.hooks.request({ daemon, host, orted });
    });
  }
}

function signalNumber(name: string): number | undefined {
  return (os.constants.signals as Record<string, number>)[name];
}
