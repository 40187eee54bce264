// pmi-fence: MPI wire-up at scale through a real controller. 2,000 simulated nodes × 8
// ranks (rankd/agent-sim.ts: 4 processes × 500 WebSocket connections speaking the real
// session protocol) run one job submitted through POST /v1/jobs; each rank puts a
// 400-byte business card and every node enters the barrier at once. Measured: the last
// barrier_in (pmi.fence sent) to the last barrier_out (pmi.fenced received), the
// controller's memory and CPU meanwhile, and then the cost the lazy answer defers: every
// node pulling every chunk of the merged cards, as a rank's first get makes it do.
//
// The controller runs with the open-file limit it is given: its log store keeps a bounded
// number of descriptors whatever the job's size, so 16,000 ranks need no raised limit.
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  measured,
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
  type Row,
} from '../lib/figure.js';
import { MIN_ROUNDS } from '../lib/interleave.js';
import { openFileLimit, readRss } from '../lib/proc-sampling.js';
import { summarize } from '../lib/stats.js';
import { startFenceJob, type FenceRound, type PullRound } from '../rankd/fence-job.js';
import { lastControllerError, startFleet, whyNoFleet, type Fleet } from '../rankd/fleet.js';
import { MAX_OPEN_LOG_FILES } from '#controller/jobs/log-store';
import { card, CARD_BYTES } from '../rankd/sim-jobs.js';
import { enrollmentNote, startSims, type SimFleet } from '../rankd/sim-fleet.js';

const NODES = 2000;
const RANKS_PER_NODE = 8;
const SIM_PROCESSES = 4;
/** After each fence every node pulls every chunk: the full allgather (about 19 s a round at 2,000 × 4 here). */
const PULL_PER_PROCESS = NODES / SIM_PROCESSES;
/** Nodes of each simulator whose warm-up pull is parsed and checked card by card. */
const VERIFY_PER_PROCESS = 12;
/** Descriptors the controller needs beside log files and agent sockets (database, REST, stdio). */
const FD_MARGIN = 512;
const FENCE_GOAL: Goal = { on: 'rankd', op: '<', value: 1000, text: '< 1 s' };

const n = (x: number) => x.toLocaleString('en-US');
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const med = (xs: number[]) => summarize(xs).median;

export const pmiFenceFigure: FigureDescriptor = {
  name: 'pmi-fence',
  title: `PMI fence: ${n(NODES)} simulated nodes × ${RANKS_PER_NODE} ranks`,
  peers: [],
  run,
};

interface Measured {
  ranksPerNode: number;
  fences: FenceRound[];
  pulls: PullRound[];
  ended: string;
  rssMb: { rest: number; job: number };
}

function fenceLabel(rpn: number): string {
  return `PMI fence, ${n(NODES)} nodes × ${rpn} ranks, ${CARD_BYTES}-B cards: last barrier_in → last barrier_out`;
}
function pullLabel(rpn: number, pull?: PullRound, chunks?: number): string {
  const what = pull
    ? `all ${n(pull.nodes)} nodes each pull all ${chunks} chunks (${mib(pull.bytesPerNode)} MiB) at once`
    : `all ${n(SIM_PROCESSES * PULL_PER_PROCESS)} nodes pull every chunk at once`;
  return `PMI allgather after the fence (${n(NODES)} × ${rpn}): ${what}`;
}

/** One job of NODES × rpn: a warm-up epoch that verifies every card, then the measured epochs, then a clean end. */
async function measure(ctx: BenchContext, fleet: Fleet, sims: SimFleet, rpn: number): Promise<Measured> {
  const rest = readRss(fleet.controller.pid)?.totalKb ?? 0;
  const job = await startFenceJob(fleet, sims, { nodes: NODES, ranksPerNode: rpn, oversubscribe: true }, ctx.log);
  const jobRss = readRss(fleet.controller.pid)?.totalKb ?? 0;
  const warm = await job.fence(0);
  if (warm.chunks === 0)
    throw new Error(
      `the merged cards came back inline; expected a lazy answer at ${n(job.worldSize)} × ${CARD_BYTES} B`,
    );
  await job.pull(0, warm.chunks, VERIFY_PER_PROCESS, true);
  ctx.log(
    `pmi-fence: ${n(NODES)} × ${rpn}: warm-up fence ${warm.lastInToLastOutMs.toFixed(0)} ms, ${warm.chunks} chunks, every card verified on ${SIM_PROCESSES * VERIFY_PER_PROCESS} nodes`,
  );
  const rounds = Math.max(MIN_ROUNDS, ctx.rounds);
  const fences: FenceRound[] = [];
  const pulls: PullRound[] = [];
  for (let epoch = 1; epoch <= rounds; epoch++) {
    const f = await job.fence(epoch);
    const p = await job.pull(epoch, f.chunks, PULL_PER_PROCESS, false);
    fences.push(f);
    pulls.push(p);
    ctx.log(
      `  round ${epoch}/${rounds}: fence ${f.lastInToLastOutMs.toFixed(0)} ms (sends spread over ${f.sendSpreadMs.toFixed(0)} ms), controller ${f.usage.cpuMs.toFixed(0)} ms CPU, peak RSS ${f.usage.peakRssMb.toFixed(0)} MB; pull ${p.ms.toFixed(0)} ms`,
    );
  }
  const ended = await job.end();
  return { ranksPerNode: rpn, fences, pulls, ended, rssMb: { rest: rest / 1024, job: jobRss / 1024 } };
}

function rowsOf(m: Measured): Row[] {
  const size = `${n(NODES)} × ${m.ranksPerNode}`;
  return [
    {
      figure: fenceLabel(m.ranksPerNode),
      rankd: measured('ms', summarize(m.fences.map((f) => f.lastInToLastOutMs))),
      goals: [FENCE_GOAL],
    },
    {
      figure: pullLabel(m.ranksPerNode, m.pulls[0], m.fences[0]!.chunks),
      rankd: measured('ms', summarize(m.pulls.map((p) => p.ms))),
      goals: [],
    },
    {
      figure: `controller during the fence (${size}): peak RSS`,
      rankd: measured('MB', summarize(m.fences.map((f) => f.usage.peakRssMb))),
      goals: [],
    },
    {
      figure: `controller during the fence (${size}): CPU (share of one core)`,
      rankd: measured('%', summarize(m.fences.map((f) => f.usage.cpuPercent))),
      goals: [],
    },
  ];
}

function notesOf(m: Measured): string {
  const world = NODES * m.ranksPerNode;
  return [
    `${n(NODES)} × ${m.ranksPerNode} (${n(world)} ranks, ${m.fences[0]!.chunks} chunks): sends spread over ${med(m.fences.map((f) => f.sendSpreadMs)).toFixed(0)} ms per round (median);`,
    `the controller spent ${med(m.fences.map((f) => f.usage.cpuMs)).toFixed(0)} ms of CPU per fence and ${n(Math.round(med(m.pulls.map((p) => p.usage.cpuMs))))} ms per allgather, sending ${((m.pulls[0]!.nodes * m.pulls[0]!.bytesPerNode) / 2 ** 30).toFixed(1)} GiB (medians, CPU in 10-ms clock ticks), with RSS ${m.rssMb.rest.toFixed(0)} MB with the nodes connected and no job, ${m.rssMb.job.toFixed(0)} MB once the job ran, ${med(m.pulls.map((p) => p.usage.peakRssMb)).toFixed(0)} MB at the peak of a pull;`,
    `the job ended ${m.ended.replace(/\d{4,}/g, (d) => n(Number(d)))}.`,
  ].join(' ');
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const world = NODES * RANKS_PER_NODE;
  const cardJson = Buffer.byteLength(JSON.stringify([`card-${world - 1}`, card(world - 1)]));
  const limits = [
    `The fence is a star: every node sends its ranks' puts to the controller once all its local ranks are in barrier_in; the controller keeps them per node and, when the last node has fenced, merges them in node order (${n(world)} pairs of ~${cardJson} bytes as JSON at 2,000 × 8, ~${mib(world * cardJson)} MiB) and answers every node.`,
    'The answer is encoded once and the same bytes go to every node; merged puts over 64 KiB are not pushed, the answer only says how many 256-KiB chunks hold them, and an agent pulls them (pmi.fetch → pmi.chunk, one at a time) when one of its ranks first asks for a key it lacks.',
    'So the barrier costs the decoding of the last fences, one merge and one chunking of every card, and 2,000 small frames out, all in one controller process on one core.',
    "The deferred part is the allgather: MPICH gets every other rank's card after the fence, so every node that runs MPICH ranks pulls every chunk, and through a star that is nodes × merged size leaving one process (gigabytes at 2,000 nodes) — what the allgather row measures, bounded by the controller's socket writes on one core, and what a tree of agents (hydra's proxies, Flux's brokers) would spread over the nodes.",
  ];
  const notes: string[] = [];
  const report = (rows: Row[]): FigureReport => ({ rows, notes, limits: limits.join(' '), peersUsed: [] });
  const notMeasuredRows = (why: string): Row[] => [
    { figure: fenceLabel(RANKS_PER_NODE), rankd: notMeasured(why), goals: [FENCE_GOAL] },
    { figure: pullLabel(RANKS_PER_NODE), rankd: notMeasured(why), goals: [] },
  ];
  const notRun = (why: string) => report(notMeasuredRows(why));
  const why = await whyNoFleet(ctx);
  if (why) return notRun(why);

  let fleet: Fleet;
  try {
    fleet = await startFleet(ctx, { agents: 0, prefix: 'fence' });
  } catch (err) {
    return notRun(`the controller did not start: ${(err as Error).message}`);
  }
  let sims: SimFleet | undefined;
  try {
    sims = await startSims(ctx, fleet, { agents: NODES, processes: SIM_PROCESSES, prefix: 'fsim' });
    // the controller's own limit, as started: its log store keeps at most MAX_OPEN_LOG_FILES
    // descriptors whatever the number of ranks, beside one socket per node
    const limit = openFileLimit(fleet.controller.pid) ?? 0;
    const needed = NODES + MAX_OPEN_LOG_FILES + FD_MARGIN;
    if (limit < needed)
      notes.push(
        `The controller's open-file limit here is ${n(limit)}, under the ${n(needed)} it may need (${n(NODES)} sockets, ${n(MAX_OPEN_LOG_FILES)} log files, ${FD_MARGIN} more).`,
      );
    let m: Measured | null = null;
    let rows: Row[];
    try {
      m = await measure(ctx, fleet, sims, RANKS_PER_NODE);
      rows = rowsOf(m);
    } catch (err) {
      await sleep(1000); // the controller's log line may trail its 500
      const logged = lastControllerError(fleet);
      const reason = `${(err as Error).message}${logged ? `; the controller logged: ${logged}` : ''}`;
      ctx.log(`pmi-fence: ${n(NODES)} × ${RANKS_PER_NODE}: ${reason}`);
      rows = notMeasuredRows(reason);
    }
    notes.push(
      `One \`rankd controller\` and ${SIM_PROCESSES} simulator processes × ${NODES / SIM_PROCESSES} WebSocket connections on 127.0.0.1 (TLS, each with its own node certificate), each a node with this machine's facts. Each job was planned with POST /v1/plan and submitted with POST /v1/jobs, placement \`{"nodes":${NODES},"ranksPerNode":R,"oversubscribe":true}\` (the facts are this ${os.availableParallelism()}-core machine's, so R ranks per node need oversubscribe), mpi mode pmi1 (the default); the simulated agents answer job.start with a rank.started per rank and end the job with a rank.exit per rank.`,
      `A round is one fence epoch of the job: the bench tells every simulator at once, each sends its ${NODES / SIM_PROCESSES} nodes' fences (one pmi.fence of R cards each, key \`card-<rank>\`, a ${CARD_BYTES}-byte value) and notes when each pmi.fenced arrives; times are performance.timeOrigin + performance.now() in each simulator. After each fence every node pulls every chunk, one after the other as an agent does on its ranks' first missed get, all nodes at once; the allgather row is the first pmi.fetch to the last chunk received. Epoch 0 is an unmeasured warm-up whose pull, on ${SIM_PROCESSES * VERIFY_PER_PROCESS} nodes, parsed every chunk and found every card intact; measured pulls count bytes and leave the JSON parsing, which each agent does on its own node, untimed.`,
      ...(m ? [notesOf(m)] : []),
      enrollmentNote(sims),
      `Everything shares this machine's ${os.availableParallelism()} cores: the controller, the simulators sending ${n(NODES)} fences and taking ${n(NODES)} answers, and the bench; the simulators' own time is inside every number.`,
    );
    return report(rows);
  } catch (err) {
    return notRun((err as Error).message);
  } finally {
    await sims?.stop();
    await fleet.stop();
  }
}
