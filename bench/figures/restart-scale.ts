// restart-scale: a gang restart at scale. One job of 2,000 nodes × 8 ranks with
// --max-restarts 1 runs on a fleet of 2,001 simulated nodes (rankd/agent-sim.ts, as in
// scale-launch: enrolled nodes over mTLS reporting a captured dual-socket machine), so one
// node is a spare. Its ranks sleep. Then one node of the job is lost: its simulator cuts
// the node's link without a close frame and sends nothing more, as a machine that lost
// power. Once the controller declares it lost (no heartbeat for its lost-after time), it
// writes off that node's ranks, stops the other 15,992 (job.abort; the simulated ranks end
// by SIGTERM), closes attempt 0, queues the job again without the lost node and starts
// attempt 1 (`<job>-1` to the agents) on the 1,999 others and the spare.
//
// Timed by the controller's history (rankd.db's events, read-only, polled every 10 ms):
// from the lost node's node.state → lost to the last rank.started of `<job>-1`. The time
// the controller takes to notice the loss is its configured lost-after time, not work; it
// is in the notes, not the row. Each round then ends attempt 1 (every rank exits 0) and
// brings the node back, and the next round loses another node.
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../lib/child.js';
import { extractDump, listDumps } from '../lib/conformance.js';
import {
  measured,
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
  type Row,
} from '../lib/figure.js';
import {
  armedNodeOptions,
  formatFrames,
  saveProfile,
  startProfile,
  summarizeProfile,
  type ProfileSummary,
  type Session,
} from '../lib/node-profile.js';
import { clockTicksPerSecond, readProc } from '../lib/proc-sampling.js';
import { summarize, type Stat } from '../lib/stats.js';
import { lastControllerError, startFleet, whyNoFleet, type Fleet } from '../rankd/fleet.js';
import { httpsRequest } from '../rankd/https.js';
import { RestartHistory, TERMINAL, type StateEvent } from '../rankd/restart-history.js';
import { enrollmentNote, startSims, type SimFleet } from '../rankd/sim-fleet.js';

const NODES = 2000;
const SPARES = 1;
const RANKS_PER_NODE = 8;
const WORLD = NODES * RANKS_PER_NODE;
const SIM_PROCESSES = 4;
/** A captured 2-socket node: 2 × 8 cores × 2 threads, 2 NUMA nodes (hwloc's corpus). */
const DUMP = '32intel64-2p8co2t+8ve.tar.bz2';
/** Ranks that run until they are ended: the simulators end `sleep` by SIGTERM at a job.abort (SIM_SLEEP_RANKS). */
const COMMAND = ['sleep', '3600'];
/**
 * The controller's heartbeat: a node is lost after 12 of them without one (24 s) rather
 * than the default 60 s, which only shortens each round's wait for the loss to be noticed.
 */
const HEARTBEAT_MS = 2000;
const POLL_MS = 10;
const STEP_TIMEOUT_MS = 300_000;
const SETTLE_MS = 15_000;
const QUIET_LIMIT_MS = 60_000;
/** Quiet: under this share of one core over a second (heartbeats of 2,000 nodes cost a few %). */
const QUIET_CPU = 0.15;

const PROFILE_INTERVAL_US = 250;
const TOP = 12;

const GOAL: Goal = { on: 'rankd', op: '<', value: 2000, text: '< 2 s' };

const n = (x: number) => x.toLocaleString('en-US');
const ms = (x: number) => `${n(Math.round(x))} ms`;

export const restartScaleFigure: FigureDescriptor = {
  name: 'restart-scale',
  title: `gang restart of ${n(NODES)} simulated nodes × ${RANKS_PER_NODE} ranks after a node loss`,
  peers: [],
  run,
};

/** One restart; every time from the lost node's node.state → lost, in ms. */
interface Restart {
  jobId: string;
  node: string;
  /** The node's link cut by its simulator → declared lost by the controller. */
  detectMs: number;
  /** job.stopping of attempt 0: the job.aborts sent. */
  stoppingMs: number;
  /** The last rank.exited of attempt 0. */
  lastExitMs: number;
  /** job.attempt: attempt 0 closed, the job queued again. */
  requeuedMs: number;
  /** job.allocated of attempt 1: planned, its starts being sent. */
  allocatedMs: number;
  /** The last rank.started of attempt 1. */
  startedMs: number;
  /** The controller's CPU time from seeing the loss to seeing attempt 1 running (10-ms ticks). */
  cpuMs: number;
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const size = `${n(NODES)} nodes × ${RANKS_PER_NODE} ranks on ${n(NODES + SPARES)} simulated nodes, --max-restarts 1`;
  const labels = {
    started: `${size}: node declared lost → every rank of attempt 1 started`,
    fromEnd: `${size}: attempt 0 closed (job queued again) → every rank of attempt 1 started`,
    stopped: `${size}: node declared lost → attempt 0 closed (${n(WORLD - RANKS_PER_NODE)} ranks stopped)`,
    cpu: `${size}: controller CPU time, node declared lost → attempt 1 running`,
  };
  const rowsOf = (side: (key: keyof typeof labels) => Row['rankd']): Row[] => [
    { figure: labels.started, rankd: side('started'), goals: [GOAL] },
    { figure: labels.fromEnd, rankd: side('fromEnd'), goals: [] },
    { figure: labels.stopped, rankd: side('stopped'), goals: [] },
    { figure: labels.cpu, rankd: side('cpu'), goals: [] },
  ];
  const notes: string[] = [];
  let limits = 'The figure did not get as far as a restart; see the table.';
  const report = (rows: Row[]): FigureReport => ({ rows, notes, limits, peersUsed: [] });
  const notRun = (why: string) => report(rowsOf(() => notMeasured(why)));

  const why = await whyNoFleet(ctx);
  if (why) return notRun(why);
  const loadAtStart = os.loadavg()[0]!;
  let simEnv: Record<string, string> = { SIM_SLEEP_RANKS: '1' };
  let placement: Record<string, unknown> = { nodes: NODES, ranksPerNode: RANKS_PER_NODE };
  let factsNote: string;
  const dump = listDumps(ctx.repoRoot)?.find((d) => d.tarball === DUMP);
  if (dump) {
    const root = await extractDump(ctx.repoRoot, dump, path.join(ctx.tmpDir, 'dump'));
    simEnv = { ...simEnv, SIM_ROOT: root };
    factsNote =
      `Every simulated node reports the facts of hwloc's captured \`${DUMP.replace(/\.tar\.bz2$/, '')}\` ` +
      '(2 sockets × 8 cores × 2 threads), so 8 ranks a node fit without oversubscribing.';
  } else {
    placement = { ...placement, oversubscribe: true };
    factsNote = "hwloc's corpus is absent, so every simulated node reports this machine's facts, with oversubscribe.";
  }

  let fleet: Fleet;
  try {
    // the inspector port armed (closed until SIGUSR1) so that one restart can be profiled
    fleet = await startFleet(ctx, {
      agents: 0,
      prefix: 'restart',
      controllerArgs: ['--heartbeat-ms', String(HEARTBEAT_MS)],
      controllerEnv: { ...process.env, NODE_OPTIONS: armedNodeOptions(process.env) },
    });
  } catch (err) {
    return notRun(`the controller did not start: ${(err as Error).message}`);
  }
  let sims: SimFleet | undefined;
  let history: RestartHistory | undefined;
  try {
    sims = await startSims(ctx, fleet, {
      agents: NODES + SPARES,
      processes: SIM_PROCESSES,
      prefix: 'rsim',
      env: simEnv,
    });
    history = new RestartHistory(fleet.dataDir);
    ctx.log(`restart-scale: ${n(NODES + SPARES)} simulated agents ready; settling ${SETTLE_MS / 1000} s`);
    await sleep(SETTLE_MS);
    const step = { fleet, sims, history, placement };
    const warm = await restartOnce(ctx, step, 0);
    ctx.log(`restart-scale: warm-up ${warm.jobId}: ${describe(warm)}`);
    const rounds: Restart[] = [];
    for (let i = 0; i < ctx.rounds; i++) {
      const r = await restartOnce(ctx, step, i + 1);
      rounds.push(r);
      ctx.log(`restart-scale: round ${i + 1}/${ctx.rounds} ${r.jobId}: ${describe(r)}`);
    }
    const profiled = await profiledRestart(ctx, step, ctx.rounds + 1);
    const stat = (pick: (r: Restart) => number) => summarize(rounds.map(pick));
    limits = limitsText(stat, profiled.summary);
    notes.push(...notesText(stat, rounds.length, factsNote, loadAtStart), profiled.note, enrollmentNote(sims));
    return report(
      rowsOf((key) => {
        switch (key) {
          case 'started':
            return measured(
              'ms',
              stat((r) => r.startedMs),
            );
          case 'fromEnd':
            return measured(
              'ms',
              stat((r) => r.startedMs - r.requeuedMs),
            );
          case 'stopped':
            return measured(
              'ms',
              stat((r) => r.requeuedMs),
            );
          case 'cpu':
            return measured(
              'ms',
              stat((r) => r.cpuMs),
            );
        }
      }),
    );
  } catch (err) {
    await sleep(1000); // the controller's log line may trail its 500
    const logged = lastControllerError(fleet);
    return notRun(`${(err as Error).message}${logged ? `; the controller logged: ${logged}` : ''}`);
  } finally {
    history?.close();
    await sims?.stop();
    await fleet.stop();
  }
}

interface Step {
  fleet: Fleet;
  sims: SimFleet;
  history: RestartHistory;
  placement: Record<string, unknown>;
}

/**
 * One more restart, not counted, with the controller under V8's sampling profiler (its
 * inspector opened on loopback by SIGUSR1) from the link's cut to attempt 1 running: what
 * bounds the restart, by function. The wait for the loss to be noticed is idle time there.
 */
async function profiledRestart(
  ctx: BenchContext,
  step: Step,
  round: number,
): Promise<{ summary: ProfileSummary | null; note: string }> {
  let session: Session | null = null;
  let summary: ProfileSummary | null = null;
  const stop = async () => {
    if (!session) return;
    const raw = await session.stop();
    session = null;
    summary = summarizeProfile(raw, TOP, (url) => url.includes('/packages/'));
    const file = path.join(os.tmpdir(), `rankd-restart-scale-${Date.now()}.cpuprofile`);
    saveProfile(raw, file);
    ctx.log(`restart-scale: CPU profile of the controller over one restart in ${file}`);
  };
  try {
    const pid = step.fleet.controller.pid;
    const log = step.fleet.controller.logFile;
    const r = await restartOnce(ctx, step, round, {
      cut: async () => void (session = await startProfile(pid, log, PROFILE_INTERVAL_US)),
      running: stop,
    });
    ctx.log(`restart-scale: profiled ${r.jobId}: ${describe(r)}`);
    if (!summary) return { summary: null, note: 'No CPU profile: the profiler gave nothing.' };
    const p: ProfileSummary = summary;
    ctx.log(`restart-scale: self time: ${formatFrames(p.self)}`);
    ctx.log(`restart-scale: total time: ${formatFrames(p.total)}`);
    return {
      summary: p,
      note:
        `CPU profile of one more restart (not counted; V8's sampling profiler every ${PROFILE_INTERVAL_US} µs from ` +
        `the cut to attempt 1 running; every rank started ${ms(r.startedMs)} after the loss under the profiler): ` +
        `${ms(p.busyMs)} busy. Self time, top ${TOP}: ${formatFrames(p.self)}. rankd's own functions including ` +
        `their callees: ${formatFrames(p.total)}. Self time by package: ${formatFrames(p.packages)}.`,
    };
  } catch (err) {
    ctx.log(`restart-scale: no profile: ${(err as Error).message}`);
    return { summary: null, note: `No CPU profile: ${(err as Error).message}.` };
  } finally {
    await stop().catch(() => undefined);
  }
}

/** Polls the history every POLL_MS until `found` gives a value; throws with `what` after STEP_TIMEOUT_MS. */
async function until<T>(what: string, found: () => T | undefined): Promise<T> {
  let value: T | undefined;
  const ok = await waitFor(() => (value = found()) !== undefined, STEP_TIMEOUT_MS, POLL_MS);
  if (!ok || value === undefined) throw new Error(`${what} did not happen within ${STEP_TIMEOUT_MS / 1000} s`);
  return value;
}

/** The job's first `running` after its `queued` again: attempt 1 started. */
function secondRun(states: StateEvent[]): StateEvent | undefined {
  const requeued = states.findIndex((s, i) => i > 0 && s.to === 'queued');
  return requeued < 0 ? undefined : states.slice(requeued).find((s) => s.to === 'running');
}

/**
 * Submits the job, waits until it runs, loses one of its nodes, times attempt 1's start,
 * then ends the job and revives the node.
 */
async function restartOnce(
  ctx: BenchContext,
  s: Step,
  round: number,
  /** Run once the node's link is cut, and once attempt 1 runs (a profile's start and stop). */
  hooks: { cut?: () => Promise<void>; running?: () => Promise<void> } = {},
): Promise<Restart> {
  const { fleet, sims, history } = s;
  const answer = await httpsRequest(`${fleet.url}/v1/jobs`, {
    ca: fleet.ca,
    method: 'POST',
    headers: { authorization: `Bearer ${fleet.apiToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command: COMMAND, name: 'restart-scale', placement: s.placement, maxRestarts: 1 }),
    timeoutMs: STEP_TIMEOUT_MS,
  });
  if (answer.status !== 201) throw new Error(`POST /v1/jobs: ${answer.status} ${answer.text.slice(0, 300)}`);
  const id = (JSON.parse(answer.text) as { id: string }).id;
  const states = () => history.jobStates(id);
  const ended = () => states().find((x) => TERMINAL.has(x.to));
  await until(`job ${id} running`, () => {
    const end = ended();
    if (end) throw new Error(`job ${id} ended ${end.to} before any node was lost: ${end.reason}`);
    return states().find((x) => x.to === 'running');
  });
  // a different node each round, so that no node fails twice (--exclude-after would drain it)
  const node = history.rank(id, 0, ((round * 251) % NODES) * RANKS_PER_NODE).node;
  await quiet(fleet.controller.pid);

  const mark = history.lastEventId();
  sims.send({ cmd: 'lose', node });
  const cut = (await sims.collect('lost', 30_000)).find((e) => e.mine);
  if (!cut) throw new Error(`no simulator holds node ${node}`);
  await hooks.cut?.();
  const lost = await until(`node ${node} declared lost`, () =>
    history.nodeStates(node, mark).find((x) => x.to === 'lost'),
  );
  const cpuAtLoss = readProc(fleet.controller.pid);
  await until(`attempt 1 of job ${id} running`, () => {
    const all = states();
    const end = all.find((x) => TERMINAL.has(x.to));
    if (end) throw new Error(`job ${id} ended ${end.to} instead of restarting: ${end.reason}`);
    return secondRun(all);
  });
  const cpuAtRun = readProc(fleet.controller.pid);
  await hooks.running?.();
  const attempt1 = `${id}-1`;
  const started = history.rankSpan(attempt1, 'rank.started');
  const exited = history.rankSpan(id, 'rank.exited');
  if (started.count !== WORLD || started.last === null)
    throw new Error(`job ${id}: ${started.count} rank.started of attempt 1 recorded, not ${n(WORLD)}`);
  if (exited.count !== WORLD || exited.last === null)
    throw new Error(`job ${id}: ${exited.count} rank.exited of attempt 0 recorded, not ${n(WORLD)}`);
  const at = (kind: string, attempt: number) => {
    const e = history.events(id, kind).find((x) => Number(x.data['attempt']) === attempt);
    if (!e) throw new Error(`job ${id} has no ${kind} of attempt ${attempt} in its history`);
    return e.at - lost.at;
  };
  const attemptNodes = history.events(id, 'job.allocated').find((x) => Number(x.data['attempt']) === 1)?.data;
  if (attemptNodes && node in ((attemptNodes['nodes'] as Record<string, unknown> | undefined) ?? {}))
    throw new Error(`job ${id}: attempt 1 was planned on the lost node ${node}`);
  const restart: Restart = {
    jobId: id,
    node,
    detectMs: lost.at - Number(cut.at),
    stoppingMs: at('job.stopping', 0),
    lastExitMs: exited.last - lost.at,
    requeuedMs: at('job.attempt', 0),
    allocatedMs: at('job.allocated', 1),
    startedMs: started.last - lost.at,
    cpuMs:
      cpuAtLoss && cpuAtRun ? ((cpuAtRun.cpuTicks - cpuAtLoss.cpuTicks) * 1000) / clockTicksPerSecond() : Number.NaN,
  };

  // the round's end: attempt 1's ranks exit 0, and the lost node comes back for the next round
  sims.send({ cmd: 'exit', jobId: attempt1 });
  await sims.collect('exited', 60_000);
  const end = await until(`job ${id} ended`, ended);
  if (end.to !== 'succeeded') throw new Error(`job ${id} ended ${end.to}: ${end.reason}`);
  const back = history.lastEventId();
  sims.send({ cmd: 'revive', node });
  await sims.collect('revived', 30_000);
  await until(`node ${node} ready again`, () => history.nodeStates(node, back).find((x) => x.to === 'ready'));
  return restart;
}

/** Waits until the controller uses under QUIET_CPU of a core over a second (bounded by QUIET_LIMIT_MS). */
async function quiet(pid: number): Promise<void> {
  const hz = clockTicksPerSecond();
  const deadline = Date.now() + QUIET_LIMIT_MS;
  while (Date.now() < deadline) {
    const a = readProc(pid);
    await sleep(1000);
    const b = readProc(pid);
    if (!a || !b) return;
    if ((b.cpuTicks - a.cpuTicks) / hz < QUIET_CPU) return;
  }
}

function describe(r: Restart): string {
  return (
    `lost ${r.node} (noticed ${ms(r.detectMs)} after its link was cut); from then: stopping ${ms(r.stoppingMs)}, ` +
    `last exit of attempt 0 ${ms(r.lastExitMs)}, queued again ${ms(r.requeuedMs)}, attempt 1 allocated ` +
    `${ms(r.allocatedMs)}, every rank started ${ms(r.startedMs)}; controller ${ms(r.cpuMs)} CPU`
  );
}

function limitsText(stat: (pick: (r: Restart) => number) => Stat, profile: ProfileSummary | null): string {
  const med = (pick: (r: Restart) => number) => ms(stat(pick).median);
  const parts = [
    `Once the controller declares the node lost, one controller process on one core does, in order: it writes off ` +
      `the lost node's ${RANKS_PER_NODE} ranks and sends ${n(NODES - 1)} job.aborts (${med((r) => r.stoppingMs)}), ` +
      `handles ${n(WORLD - RANKS_PER_NODE)} rank.exit frames (the last at ${med((r) => r.lastExitMs)}), closes ` +
      `attempt 0 and queues the job again (${med((r) => r.requeuedMs)}), plans attempt 1 on ${n(NODES)} nodes and ` +
      `sends their job.starts (${med((r) => r.allocatedMs)}), then handles ${n(WORLD)} rank.started frames ` +
      `(${med((r) => r.startedMs)}). The simulators answer as fast as they read, so the controller's CPU time ` +
      `over that span (median ${med((r) => r.cpuMs)}: twice the frames of a launch, the ends of one attempt and ` +
      'the starts of the next) is the floor of the wall time; the rest is waiting for a core shared with the ' +
      'simulators, the bench, and whatever else runs on the machine (see the load average in the notes).',
  ];
  if (profile) parts.push(`The profile's top frames by self time: ${formatFrames(profile.self.slice(0, 6))}.`);
  const started = stat((r) => r.startedMs).median;
  if (started >= GOAL.value)
    parts.push(`Missed: every rank of attempt 1 started ${ms(started - GOAL.value)} over the 2-s goal.`);
  return parts.join(' ');
}

function notesText(
  stat: (pick: (r: Restart) => number) => Stat,
  rounds: number,
  factsNote: string,
  loadAtStart: number,
): string[] {
  const detect = stat((r) => r.detectMs);
  const job = JSON.stringify({ command: COMMAND, placement: { nodes: NODES, ranksPerNode: RANKS_PER_NODE } });
  return [
    `One \`rankd controller --heartbeat-ms ${HEARTBEAT_MS}\` and ${SIM_PROCESSES} simulator processes holding ` +
      `${n(NODES + SPARES)} WebSocket connections on 127.0.0.1, each an enrolled node (mTLS). ${factsNote} ` +
      `The job, \`${job}\` with maxRestarts 1, is submitted with POST /v1/jobs as \`rankd run\` does; its ` +
      'simulated ranks run until a job.abort ends them ' +
      '(SIGTERM) or the figure ends them (exit 0).',
    `Each round loses a different node of the job: its simulator cuts the link without a close frame and sends ` +
      `nothing more. The controller noticed in ${ms(detect.median)} (min ${ms(detect.min)}, max ${ms(detect.max)}): ` +
      `its lost-after time, 12 heartbeats of ${HEARTBEAT_MS} ms, not work; the rows start at its ` +
      'node.state → lost. ' +
      "Times are the controller's own, from its history (rankd.db's events, read-only, polled every " +
      `${POLL_MS} ms); ` +
      `each round checked ${n(WORLD)} rank.exited of attempt 0 and ${n(WORLD)} rank.started of attempt 1, that ` +
      `attempt 1 was not planned on the lost node, and that the job then succeeded; the node was brought back ` +
      `before the next round. CPU time is the controller's utime+stime from /proc between the bench seeing the loss ` +
      `and seeing attempt 1 running (10-ms ticks). ${rounds} rounds after an unmeasured warm-up; medians with min ` +
      'and max.',
    `Load average (1 min): ${loadAtStart.toFixed(2)} when the figure started. This ${os.availableParallelism()}-core ` +
      'machine runs the controller, the simulators and the bench together, so their CPU is inside every time.',
  ];
}
