// One large PMI job on simulated agents, driven fence by fence: the job is planned and
// submitted through the controller's REST API like any other, its ranks are "started" by
// the simulators, and each call to fence() runs one epoch of the job-wide exchange with
// every simulated node at once. Times come from the simulators' own clocks (comparable
// across processes on one machine), the controller's usage from /proc while it runs.
import { waitFor } from '../lib/child.js';
import { watchUsage } from '../lib/proc-sampling.js';
import { api, jobState } from './api.js';
import type { Fleet } from './fleet.js';
import type { SimFleet } from './sim-fleet.js';

const START_TIMEOUT_MS = 300_000;
const FENCE_TIMEOUT_MS = 150_000;
const PULL_TIMEOUT_MS = 600_000;
const END_TIMEOUT_MS = 300_000;
/** How often the controller's RSS is read during a fence or a pull. */
const WATCH_INTERVAL_MS = 20;

export interface Usage {
  peakRssMb: number;
  cpuMs: number;
  cpuPercent: number;
}

export interface FenceRound {
  /** The last pmi.fence handed to a socket → the last pmi.fenced received: the barrier's own cost. */
  lastInToLastOutMs: number;
  /** How long the simulators took to send every node's fence (the arrival spread). */
  sendSpreadMs: number;
  /** The answer is the same frame for every node: chunks to pull, 0 when inline. */
  chunks: number;
  usage: Usage;
}

export interface PullRound {
  /** The first pmi.fetch of any sampled node → the last chunk any of them received. */
  ms: number;
  nodes: number;
  bytesPerNode: number;
  usage: Usage;
}

export interface FenceJob {
  jobId: string;
  worldSize: number;
  nodes: number;
  fence(epoch: number): Promise<FenceRound>;
  /** `perProcess` nodes of every simulator pull all of `epoch`'s chunks; `verify` checks every card came back. */
  pull(epoch: number, chunks: number, perProcess: number, verify: boolean): Promise<PullRound>;
  /** Every rank exits 0; resolves with the job's final state and reason. */
  end(): Promise<string>;
}

type Placement = { nodes: number; ranksPerNode: number; oversubscribe: boolean };

export async function startFenceJob(
  fleet: Fleet,
  sims: SimFleet,
  placement: Placement,
  log: (m: string) => void,
): Promise<FenceJob> {
  const world = placement.nodes * placement.ranksPerNode;
  const plan = await api<{ worldSize: number; nodes: unknown[] }>(fleet, 'POST', '/v1/plan', { placement });
  if (plan.worldSize !== world || plan.nodes.length !== placement.nodes) {
    throw new Error(
      `POST /v1/plan gave ${plan.worldSize} ranks on ${plan.nodes.length} nodes, not ${world} on ${placement.nodes}`,
    );
  }
  // pmi1 is the default mpi mode: left out, as `rankd run` leaves it out
  const job = await api<{ id: string }>(fleet, 'POST', '/v1/jobs', {
    command: ['./mpi_hello'],
    name: 'pmi-fence',
    placement,
  });
  log(`pmi-fence: job ${job.id} submitted (${world} ranks); waiting for every rank.started`);
  const started = await sims.collect('started', START_TIMEOUT_MS);
  const ranks = started.reduce((sum, e) => sum + Number(e.ranks), 0);
  if (ranks !== world) throw new Error(`the simulators were given ${ranks} ranks, not ${world}`);
  // every rank.started handled before the first fence, so that none of it is timed
  let state = '';
  const running = await waitFor(
    async () => (state = (await jobState(fleet, job.id))?.state ?? 'missing') === 'running',
    START_TIMEOUT_MS,
    500,
  );
  if (!running)
    throw new Error(
      `job ${job.id} is ${state}, not running, ${START_TIMEOUT_MS / 1000} s after its ranks were reported started`,
    );

  const watch = () => watchUsage(fleet.controller.pid, WATCH_INTERVAL_MS);
  const usageOf = (u: ReturnType<ReturnType<typeof watch>['stop']>): Usage => ({
    peakRssMb: u.peakRssMb,
    cpuMs: u.cpuMs,
    cpuPercent: u.cpuPercent,
  });

  return {
    jobId: job.id,
    worldSize: world,
    nodes: placement.nodes,
    async fence(epoch) {
      const w = watch();
      sims.send({ cmd: 'fence', jobId: job.id, epoch });
      const reports = await sims.collect('fenced', FENCE_TIMEOUT_MS);
      const usage = usageOf(w.stop());
      const nodes = reports.flatMap((r) => r.nodes as Array<[number, number, number]>);
      if (nodes.length !== placement.nodes)
        throw new Error(`fence ${epoch}: ${nodes.length} nodes answered, not ${placement.nodes}`);
      const chunks = new Set(nodes.map((n) => n[2]));
      if (chunks.size !== 1)
        throw new Error(`fence ${epoch}: nodes were told different chunk counts (${[...chunks].join(', ')})`);
      const sent = nodes.map((n) => n[0]);
      const lastSent = Math.max(...sent);
      const lastFenced = Math.max(...nodes.map((n) => n[1]));
      return {
        lastInToLastOutMs: lastFenced - lastSent,
        sendSpreadMs: lastSent - Math.min(...sent),
        chunks: [...chunks][0]!,
        usage,
      };
    },
    async pull(epoch, chunks, perProcess, verify) {
      const w = watch();
      sims.send({ cmd: 'pull', jobId: job.id, epoch, chunks, nodes: perProcess, verify });
      const reports = await sims.collect('pulled', PULL_TIMEOUT_MS);
      const usage = usageOf(w.stop());
      const nodes = reports.flatMap(
        (r) =>
          r.nodes as Array<{
            start: number;
            end: number;
            bytes: number;
            pairs?: number;
            keys?: number;
            wrong?: number;
          }>,
      );
      for (const n of nodes) {
        if (verify && (n.pairs !== world || n.keys !== world || n.wrong !== 0)) {
          throw new Error(
            `pull of fence ${epoch}: a node got ${n.pairs} pairs, ${n.keys} distinct keys, ${n.wrong} wrong cards, for ${world} ranks`,
          );
        }
      }
      // frames differ by a few bytes (each carries its request id); the cards are the same for all
      const bytes = nodes.map((n) => n.bytes);
      if (Math.max(...bytes) - Math.min(...bytes) > 64 * chunks)
        throw new Error(`pull of fence ${epoch}: nodes received ${Math.min(...bytes)} to ${Math.max(...bytes)} bytes`);
      return {
        ms: Math.max(...nodes.map((n) => n.end)) - Math.min(...nodes.map((n) => n.start)),
        nodes: nodes.length,
        bytesPerNode: Math.min(...bytes),
        usage,
      };
    },
    async end() {
      sims.send({ cmd: 'exit', jobId: job.id });
      await sims.collect('exited', END_TIMEOUT_MS);
      let last: { state: string; reason: string } | null = null;
      await waitFor(
        async () => {
          last = await jobState(fleet, job.id);
          return last !== null && !['pending', 'starting', 'running'].includes(last.state);
        },
        END_TIMEOUT_MS,
        500,
      );
      const final = last as { state: string; reason: string } | null;
      return final ? `${final.state} (${final.reason})` : 'not found';
    },
  };
}
