// The figure's end of the simulated agents (agent-sim.ts): a few processes of many
// connections each, started by pid, registered for teardown, and talked to over their
// stdin (commands) and stdout (events, one JSON object a line).
//
// Every simulated node is an enrolled node: one join token is minted over the REST API for
// the whole simulated fleet (uses = the node count), each process enrolls its own names
// (a key and CSR per name), and only once every process has enrolled are they told to
// connect, over mTLS. Enrollment is never inside a figure's measured time; how long it
// took is returned for the figure's notes.
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startDaemon, waitFor, type Daemon } from '../lib/child.js';
import type { BenchContext } from '../lib/figure.js';
import { onTeardown } from '../lib/teardown.js';
import type { Fleet } from './fleet.js';
import { restJson } from './https.js';
import type { Command } from './sim-jobs.js';

const SIM = fileURLToPath(new URL('./agent-sim.js', import.meta.url));
const ENROLL_TIMEOUT_MS = 600_000;
const REGISTER_TIMEOUT_MS = 180_000;

export type SimEvent = { event: string } & Record<string, unknown>;

export interface SimFleet {
  processes: Daemon[];
  /** The "ready" event each process reported once connected (with its count of welcomed connections). */
  ready: SimEvent[];
  /** Enrollment of every simulated name: the first CSR sent → the last certificate received, over all processes. */
  enrollment: { names: number; ms: number; processes: number; inFlight: number };
  /** Sends a command to every process at once. */
  send(command: Command): void;
  /** The next `event` of every process, in process order; an "error" event, an exit or the timeout rejects. */
  collect(event: string, timeoutMs: number): Promise<SimEvent[]>;
  stop(): Promise<void>;
}

/** Starts `agents` simulated agents over `processes` processes and waits until the controller lists them all ready. */
export async function startSims(
  ctx: BenchContext,
  fleet: Fleet,
  /** env: more for the simulators' environment (SIM_ROOT, SIM_EXIT_DELAY_MS; agent-sim.ts). */
  opts: { agents: number; processes: number; prefix: string; env?: Record<string, string> },
): Promise<SimFleet> {
  const processes: Daemon[] = [];
  const queues: SimEvent[][] = [];
  // `rankd join-command --uses N`: one token, one use per simulated node
  const joinToken = await fleet.mintJoinToken(opts.agents, `bench simulated agents ${opts.prefix}`);
  const stop = onTeardown(`agent simulators ${opts.prefix}`, () =>
    Promise.all(processes.map((p) => p.stop())).then(() => undefined),
  );
  const perProcess = Math.ceil(opts.agents / opts.processes);
  for (let p = 0; p < opts.processes; p++) {
    const count = Math.min(perProcess, opts.agents - p * perProcess);
    const daemon = startDaemon(
      `agent-sim ${opts.prefix}${p}`,
      [process.execPath, SIM, fleet.url, fleet.caHash, String(count), `${opts.prefix}${p}`],
      {
        logFile: path.join(ctx.tmpDir, `agent-sim-${opts.prefix}${p}.log`),
        // the join token goes by environment, off the command line
        env: { ...process.env, ...opts.env, SIM_JOIN_TOKEN: joinToken },
        pipes: true,
      },
    );
    processes.push(daemon);
    const queue: SimEvent[] = [];
    queues.push(queue);
    createInterface({ input: daemon.child.stdout! }).on('line', (line) => {
      try {
        queue.push(JSON.parse(line) as SimEvent);
      } catch {
        queue.push({ event: 'error', message: `unreadable line from the simulator: ${line.slice(0, 200)}` });
      }
    });
  }

  const collect = async (event: string, timeoutMs: number): Promise<SimEvent[]> => {
    const found: Array<SimEvent | undefined> = processes.map(() => undefined);
    const done = await waitFor(
      () => {
        for (let p = 0; p < processes.length; p++) {
          while (!found[p] && queues[p]!.length > 0) {
            const e = queues[p]!.shift()!;
            if (e.event === 'error') throw new Error(`${processes[p]!.name}: ${String(e.message)}`);
            if (e.event === event) found[p] = e;
          }
          if (!found[p] && processes[p]!.exited)
            throw new Error(`${processes[p]!.name} exited (see ${processes[p]!.logFile})`);
        }
        return found.every(Boolean);
      },
      timeoutMs,
      5,
    );
    if (!done) throw new Error(`not every simulator reported "${event}" within ${timeoutMs / 1000} s`);
    return found as SimEvent[];
  };

  try {
    const enrolled = await collect('enrolled', ENROLL_TIMEOUT_MS);
    const names = enrolled.reduce((sum, e) => sum + Number(e.names), 0);
    if (names !== opts.agents) throw new Error(`the simulators enrolled ${names} names, not ${opts.agents}`);
    const enrollment = {
      names,
      ms: Math.max(...enrolled.map((e) => Number(e.end))) - Math.min(...enrolled.map((e) => Number(e.start))),
      processes: processes.length,
      inFlight: Number(enrolled[0]!.inFlight),
    };
    ctx.log(
      `agent simulators ${opts.prefix}: ${names} names enrolled in ${(enrollment.ms / 1000).toFixed(1)} s; connecting over mTLS`,
    );
    const line = `${JSON.stringify({ cmd: 'connect' })}\n`;
    for (const p of processes) p.child.stdin!.write(line);
    const ready = await collect('ready', REGISTER_TIMEOUT_MS);
    const registered = await waitFor(
      async () => {
        const { nodes } = await restJson<{ nodes: Array<{ name: string; state: string; connected: boolean }> }>(
          fleet,
          'GET',
          '/v1/nodes',
          undefined,
          30_000,
        );
        return (
          nodes.filter((n) => n.name.startsWith(opts.prefix) && n.state === 'ready' && n.connected).length >=
          opts.agents
        );
      },
      REGISTER_TIMEOUT_MS,
      1000,
    );
    if (!registered)
      throw new Error(`fewer than ${opts.agents} simulated agents registered within ${REGISTER_TIMEOUT_MS / 1000} s`);
    return {
      processes,
      ready,
      enrollment,
      send: (command) => {
        const line = `${JSON.stringify(command)}\n`;
        for (const p of processes) p.child.stdin!.write(line);
      },
      collect,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The figure's note on enrollment, which is never inside its measured time. */
export function enrollmentNote(sims: SimFleet): string {
  const e = sims.enrollment;
  return (
    `Before anything was measured, every simulated node was enrolled as \`rankd agent --join-token … --ca-hash …\` does it: one join token minted over the REST API with ${e.names.toLocaleString('en-US')} uses, the controller's CA pinned by its hash, then per name a new ECDSA P-256 key and CSR and POST /v1/enroll. ` +
    `Enrolling ${e.names.toLocaleString('en-US')} names took ${(e.ms / 1000).toFixed(1)} s (first CSR sent → last certificate received, ${e.processes} processes with ${e.inFlight} enrollments in flight each, on this shared machine); the nodes then connected with their certificates (mTLS).`
  );
}
