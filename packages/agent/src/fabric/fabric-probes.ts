// The agent's side of `rankd check net`: it starts the probe programs the controller names,
// on the ports it offers, and ends every one of them: at the end of the probe, at its
// deadline, at fabric.stop, or when the controller link drops. Each program starts in a
// process group of its own, and the group is what gets killed, so nothing is left running.
// Each also starts under `setpriv --pdeathsig KILL`, so that an agent that is itself killed
// (OOM, SIGKILL) takes its probes with it: a server waiting for a client that never comes
// would otherwise run on.
//
// A probe needs no privilege: when the agent is root the programs run as `nobody`, so that a
// flaw in a probe program's parser is not root on the node. RDMA's locked-memory limit is
// inherited from the agent, which the unit file raises.
import { spawn, type ChildProcess } from 'node:child_process';
import { isIP } from 'node:net';
import {
  CheckErrorCode,
  type FabricMeasure,
  type FabricMeasured,
  type FabricServe,
  type FabricServing,
  type WithoutId,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import { IdentityResolver } from '../ranks/identity.js';
import { findTool } from '../ranks/program.js';
import { isListening } from './listening.js';
import { PORT_TAKEN, TOOL_PACKAGE, UnparsableOutput, clientArgs, parseMeasurement, serverArgs } from './tools.js';

/** How long a server may take to listen before the next port is tried. */
const LISTEN_WAIT_MS = 3000;
const LISTEN_POLL_MS = 15;
/** Output kept per stream: an iperf3 JSON report of a 60 s run is about 60 KB. */
const MAX_STDOUT = 1 << 20;
const MAX_STDERR = 16 << 10;
const PROBE_USER = 'nobody';
const STOPPED = 'the probe was stopped before its server listened';

type Failure = { code: string; message: string };

interface Started {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export class FabricProbes {
  private readonly servers = new Map<string, { started: Started; timer: NodeJS.Timeout }>();
  private readonly clients = new Set<ChildProcess>();
  /**
   * Serves still starting, and those of them stopped meanwhile: the controller sends
   * fabric.stop when its fabric.serve timed out, which is while the server is still starting.
   */
  private readonly starting = new Set<string>();
  private readonly stopped = new Set<string>();
  private readonly identities = new IdentityResolver({ allowRoot: true, ownUserOnly: false });

  constructor(private readonly log: Logger) {}

  async serve(m: FabricServe): Promise<WithoutId<FabricServing>> {
    if (!isIP(m.address)) return { type: 'fabric.serving', port: null, error: notAnAddress(m.address) };
    // a second server under one id would be out of reach of stop and closeAll
    if (this.servers.has(m.id) || this.starting.has(m.id)) {
      const message = `a probe server with id ${m.id} is already running`;
      return { type: 'fabric.serving', port: null, error: { code: CheckErrorCode.ProbeFailed, message } };
    }
    this.starting.add(m.id);
    try {
      return await this.startServer(m);
    } finally {
      this.starting.delete(m.id);
      this.stopped.delete(m.id);
    }
  }

  private async startServer(m: FabricServe): Promise<WithoutId<FabricServing>> {
    const program = findTool(m.tool);
    if (!program) return { type: 'fabric.serving', port: null, error: missing(m.tool) };
    let last: Failure | null = null;
    for (const port of m.ports) {
      // a port something else listens on would look ready at once: skip it before starting
      if (await isListening(port)) {
        last = { code: CheckErrorCode.PortsInUse, message: `port ${port} is in use` };
        continue;
      }
      if (this.stopped.has(m.id)) break;
      const started = await this.start(program, serverArgs(m, m.address, port));
      if ('error' in started) return { type: 'fabric.serving', port: null, error: started.error };
      const ready = await untilListening(port, started);
      if (this.stopped.has(m.id)) {
        // answer only once it is gone, so that a stopped probe leaves nothing behind
        kill(started.child);
        await started.exited;
        break;
      }
      if (ready) {
        const timer = setTimeout(() => this.stop(m.id), m.ttlMs);
        timer.unref();
        this.servers.set(m.id, { started, timer });
        void started.exited.then(() => this.forget(m.id, started));
        return { type: 'fabric.serving', port };
      }
      kill(started.child);
      const words = lastWords(started);
      last = PORT_TAKEN.test(words)
        ? { code: CheckErrorCode.PortsInUse, message: `port ${port} is in use` }
        : { code: CheckErrorCode.ProbeFailed, message: `${m.tool} did not listen on ${m.address}:${port}: ${words}` };
      // a server that failed for any reason but a taken port fails on every port
      if (last.code !== CheckErrorCode.PortsInUse) break;
    }
    if (this.stopped.has(m.id))
      return { type: 'fabric.serving', port: null, error: { code: CheckErrorCode.ProbeFailed, message: STOPPED } };
    if (last?.code === CheckErrorCode.PortsInUse)
      last = { code: CheckErrorCode.PortsInUse, message: `every offered port is in use (${m.ports.join(', ')})` };
    return { type: 'fabric.serving', port: null, error: last ?? undefined };
  }

  stop(id: string): void {
    if (this.starting.has(id)) this.stopped.add(id);
    const server = this.servers.get(id);
    if (!server) return;
    kill(server.started.child);
    this.forget(id, server.started);
  }

  async measure(m: FabricMeasure): Promise<WithoutId<FabricMeasured>> {
    const t0 = performance.now();
    const result = (fields: Partial<FabricMeasured>): WithoutId<FabricMeasured> => ({
      type: 'fabric.measured',
      forwardBps: null,
      reverseBps: null,
      latencyUs: null,
      durationMs: Math.round(performance.now() - t0),
      timedOut: false,
      ...fields,
    });
    const bad = [m.address, m.bind].find((a) => a !== undefined && !isIP(a));
    if (bad !== undefined) return result({ error: notAnAddress(bad) });
    const program = findTool(m.tool);
    if (!program) return result({ error: missing(m.tool) });
    const started = await this.start(program, clientArgs(m, m.address, m.port, m.bind));
    if ('error' in started) return result({ error: started.error });
    this.clients.add(started.child);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill(started.child);
    }, m.timeoutMs);
    const { code, signal } = await started.exited;
    clearTimeout(timer);
    this.clients.delete(started.child);
    if (timedOut)
      return result({
        timedOut: true,
        error: {
          code: CheckErrorCode.ProbeTimeout,
          message: `${m.tool} to ${m.address}:${m.port} ran past ${m.timeoutMs} ms and was ended`,
        },
      });
    try {
      return result(parseMeasurement(m.tool, started.stdout()));
    } catch (err) {
      const why = err instanceof UnparsableOutput ? err.message : String(err);
      const status = signal ? `killed by ${signal}` : `exit ${code}`;
      return result({
        error: { code: CheckErrorCode.ProbeFailed, message: `${why} (${status}); ${lastWords(started)}` },
      });
    }
  }

  /** Ends every probe program: the link dropped, or the agent stops. */
  closeAll(): void {
    for (const id of [...this.servers.keys(), ...this.starting]) this.stop(id);
    for (const child of this.clients) kill(child);
  }

  private forget(id: string, started: Started): void {
    const server = this.servers.get(id);
    if (!server || server.started !== started) return;
    clearTimeout(server.timer);
    this.servers.delete(id);
  }

  private async start(program: string, args: string[]): Promise<Started | { error: Failure }> {
    let uid: number | undefined;
    let gid: number | undefined;
    if (process.getuid?.() === 0) {
      try {
        const who = await this.identities.resolve(PROBE_USER);
        ({ uid, gid } = who);
      } catch (err) {
        return {
          error: {
            code: CheckErrorCode.ProbeFailed,
            message: `cannot resolve user ${PROBE_USER} to run probes as: ${(err as Error).message}`,
          },
        };
      }
    }
    const setpriv = findTool('setpriv');
    if (!setpriv)
      return {
        error: {
          code: CheckErrorCode.ProbeFailed,
          message: 'setpriv is not installed (apt install util-linux): probes would outlive a killed agent',
        },
      };
    const child = spawn(setpriv, ['--pdeathsig', 'KILL', '--', program, ...args], {
      cwd: '/',
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // nothing of the agent's environment: the probe needs none of it
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C' },
      uid,
      gid,
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      if (out.length < MAX_STDOUT) out += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (err.length < MAX_STDERR) err += d;
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('close', (code, signal) => resolve({ code, signal }));
    });
    const spawnError = await new Promise<Error | null>((resolve) => {
      child.once('spawn', () => resolve(null));
      child.once('error', resolve);
    });
    if (spawnError) {
      this.log.warn({ program, err: spawnError.message }, 'probe program did not start');
      return { error: { code: CheckErrorCode.ProbeFailed, message: `${program}: ${spawnError.message}` } };
    }
    return { child, stdout: () => out, stderr: () => err, exited };
  }
}

function missing(tool: keyof typeof TOOL_PACKAGE): Failure {
  return {
    code: CheckErrorCode.ToolMissing,
    message: `${tool} is not installed (apt install ${TOOL_PACKAGE[tool]})`,
  };
}

/** The schema's pattern admits only IP characters; this refuses what is still not an address. */
function notAnAddress(address: string): Failure {
  return { code: CheckErrorCode.ProbeFailed, message: `"${address}" is not an IP address` };
}

/** Resolves true once `port` listens, false when the program exits first or takes too long. */
async function untilListening(port: number, started: Started): Promise<boolean> {
  let exited = false;
  void started.exited.then(() => (exited = true));
  const deadline = performance.now() + LISTEN_WAIT_MS;
  while (!exited && performance.now() < deadline) {
    if (await isListening(port)) return !exited;
    await new Promise((r) => setTimeout(r, LISTEN_POLL_MS));
  }
  if (!exited) return false;
  await started.exited;
  return false;
}

function kill(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

/** The last line a program printed on either stream, for a failure's message. */
function lastWords(started: Started): string {
  const text = `${started.stderr()}\n${started.stdout()}`.trim();
  const line = text
    .split('\n')
    .filter((l) => l.trim() !== '' && !/^-+$/.test(l.trim()))
    .pop();
  return line ? line.trim().slice(0, 512) : 'it printed nothing';
}
