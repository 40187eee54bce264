// scale-launch: one job of 2,000 nodes × 8 ranks (16,000 ranks of `true`) through a real
// controller, from submit to every rank started and to the job's end. The nodes are
// simulated agents (rankd/agent-sim.ts: 4 processes × 500 WebSocket connections over
// mTLS, each an enrolled node) reporting the facts of a captured dual-socket machine
// (2 × 8 cores × 2 threads, from hwloc's corpus), so that 8 ranks a node fit without
// oversubscribing. Each simulated node answers job.start as an agent does: a rank.started
// per rank with a pid and the planned binding verified, then, `true` ending at once, a
// rank.exit per rank with code 0; all of it through the controller's schema validation.
//
// Times are the controller's own: the job is submitted with POST /v1/jobs (what `rankd
// run` does), and its history (the events table of its SQLite store, read-only, polled
// every 10 ms by id and subject) says when its state turned `running` (its last
// rank.started handled) and `succeeded` (its last rank.exit). The controller's CPU time
// and peak RSS are read from /proc over the same span. One more launch, not counted, runs
// under the V8 profiler (inspector opened on loopback by SIGUSR1) to name what bounds it,
// and before the fleet starts the controller's per-rank writes are timed alone with its own
// store code (one transaction each, as it writes them, and in transactions of 100 ranks).
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { openDatabase } from '#controller/store/database';
import { EventsRepo } from '#controller/store/events-repo';
import type { JobRecord, RankRecord } from '#controller/jobs/job-records';
import { JobsRepo } from '#controller/jobs/jobs-repo';
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
import { MIN_ROUNDS } from '../lib/interleave.js';
import {
  armedNodeOptions,
  formatFrames,
  saveProfile,
  startProfile,
  summarizeProfile,
  type ProfileSummary,
} from '../lib/node-profile.js';
import { clockTicksPerSecond, readProc, readRss, watchUsage } from '../lib/proc-sampling.js';
import { summarize } from '../lib/stats.js';
import { api, jobState } from '../rankd/api.js';
import { httpsRequest } from '../rankd/https.js';
import { lastControllerError, startFleet, whyNoFleet, type Fleet } from '../rankd/fleet.js';
import { enrollmentNote, startSims, type SimFleet } from '../rankd/sim-fleet.js';

const NODES = 2000;
const RANKS_PER_NODE = 8;
const SIM_PROCESSES = 4;
/** A captured 2-socket node: 2 × 8 cores × 2 threads, 2 NUMA nodes (hwloc's corpus). */
const DUMP = '32intel64-2p8co2t+8ve.tar.bz2';
const COMMAND = ['true'];
/** How often the controller's history is read while a launch runs. */
const POLL_MS = 10;
const LAUNCH_TIMEOUT_MS = 300_000;
/** After the fleet is up, and between launches: the controller goes quiet (heartbeats only) before the next. */
const SETTLE_MS = 15_000;
const QUIET_LIMIT_MS = 60_000;
/** Quiet: under this share of one core over a second (heartbeats of 2,000 nodes cost a few %). */
const QUIET_CPU = 0.15;
const PROFILE_INTERVAL_US = 250;
const TOP = 12;

const STARTED_GOAL: Goal = { on: 'rankd', op: '<', value: 1000, text: '< 1 s' };
const DONE_GOAL: Goal = { on: 'rankd', op: '<', value: 3000, text: '< 3 s' };

const n = (x: number) => x.toLocaleString('en-US');
const med = (xs: number[]) => summarize(xs).median;
const ms = (x: number) => `${n(Math.round(x))} ms`;

export const scaleLaunchFigure: FigureDescriptor = {
  name: 'scale-launch',
  title: `launch of ${n(NODES)} simulated nodes × ${RANKS_PER_NODE} ranks of \`true\``,
  peers: [],
  run,
};

/** One launch, timed by the controller's history: every time is from the bench's submit (Date.now(), the controller's clock too). */
interface Launch {
  jobId: string;
  /** POST /v1/jobs answered: admission, planning, the scheduling pass and every job.start handed to its socket. */
  answeredMs: number;
  /** The size of that answer: the whole job view. */
  answerBytes: number;
  /** job.state → starting: the job.starts were sent. */
  dispatchedMs: number;
  /** The first and last job.start received by a simulated node. */
  firstJobStartMs: number;
  lastJobStartMs: number;
  /** job.state → running: the last rank.started handled. */
  startedMs: number;
  /** job.state → succeeded: the last rank.exit handled. */
  doneMs: number;
  cpuMs: number;
  peakRssMb: number;
  load: number;
}

/** The controller's history, read-only, as the queue tests read it. */
class History {
  private readonly db: Database.Database;
  private readonly states;
  private readonly span;

  constructor(dataDir: string) {
    this.db = new Database(path.join(dataDir, 'rankd.db'), { readonly: true, fileMustExist: true });
    this.states = this.db.prepare("SELECT at, data FROM events WHERE subject = ? AND kind = 'job.state' ORDER BY id");
    // a rank's subject is JOB/RANK: the range [JOB/, JOB0) holds exactly those ('0' follows '/')
    this.span = this.db.prepare(
      'SELECT MIN(at) AS first, MAX(at) AS last, COUNT(*) AS count FROM events WHERE subject >= ? AND subject < ? AND kind = ?',
    );
  }

  jobStates(id: string): Array<{ at: number; to: string; reason: string }> {
    return (this.states.all(id) as Array<{ at: number; data: string }>).map((r) => {
      const d = JSON.parse(r.data) as { to: string; reason: string };
      return { at: r.at, to: d.to, reason: d.reason };
    });
  }

  rankSpan(id: string, kind: 'rank.started' | 'rank.exited'): { first: number; last: number; count: number } {
    return this.span.get(`${id}/`, `${id}0`, kind) as { first: number; last: number; count: number };
  }

  close(): void {
    this.db.close();
  }
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed-out', 'lost']);

/** `onEnd` runs as soon as the end is seen, before the checks (which read the job back through the API). */
async function launch(
  fleet: Fleet,
  sims: SimFleet,
  history: History,
  placement: Record<string, unknown>,
  onEnd?: () => Promise<void>,
): Promise<Launch> {
  const load = os.loadavg()[0]!;
  const watch = watchUsage(fleet.controller.pid, 20);
  const t0 = Date.now();
  const answer = await httpsRequest(`${fleet.url}/v1/jobs`, {
    ca: fleet.ca,
    method: 'POST',
    headers: { authorization: `Bearer ${fleet.apiToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command: COMMAND, name: 'scale-launch', placement }),
    timeoutMs: LAUNCH_TIMEOUT_MS,
  });
  const answeredMs = Date.now() - t0;
  if (answer.status !== 201) throw new Error(`POST /v1/jobs: ${answer.status} ${answer.text.slice(0, 300)}`);
  const job = JSON.parse(answer.text) as { id: string };
  let states: ReturnType<History['jobStates']> = [];
  const ended = await waitFor(
    () => (states = history.jobStates(job.id)).some((s) => TERMINAL.has(s.to)),
    LAUNCH_TIMEOUT_MS,
    POLL_MS,
  );
  const usage = watch.stop();
  await onEnd?.();
  if (!ended)
    throw new Error(
      `job ${job.id} did not end within ${LAUNCH_TIMEOUT_MS / 1000} s (its states: ${states.map((s) => s.to).join(' → ') || 'none'})`,
    );
  const final = states.find((s) => TERMINAL.has(s.to))!;
  if (final.to !== 'succeeded') throw new Error(`job ${job.id} ended ${final.to}: ${final.reason}`);
  const at = (to: string) => {
    const s = states.find((x) => x.to === to);
    if (!s)
      throw new Error(`job ${job.id} has no job.state → ${to} in its history (${states.map((x) => x.to).join(' → ')})`);
    return s.at - t0;
  };
  const started = history.rankSpan(job.id, 'rank.started');
  const exited = history.rankSpan(job.id, 'rank.exited');
  const world = NODES * RANKS_PER_NODE;
  if (started.count !== world || exited.count !== world)
    throw new Error(
      `job ${job.id}: ${started.count} rank.started and ${exited.count} rank.exited recorded, not ${world}`,
    );
  const got = await sims.collect('started', 60_000);
  const ranks = got.reduce((sum, e) => sum + Number(e.ranks), 0);
  if (ranks !== world) throw new Error(`the simulators were given ${ranks} ranks, not ${world}`);
  // and through the API, as a client sees it
  const summary = await jobState(fleet, job.id);
  if (summary?.state !== 'succeeded')
    throw new Error(`GET /v1/jobs says job ${job.id} is ${summary?.state ?? 'missing'}`);
  return {
    jobId: job.id,
    answeredMs,
    answerBytes: Buffer.byteLength(answer.text),
    dispatchedMs: at('starting'),
    firstJobStartMs: Math.min(...got.map((e) => Number(e.firstAt))) - t0,
    lastJobStartMs: Math.max(...got.map((e) => Number(e.lastAt))) - t0,
    startedMs: at('running'),
    doneMs: final.at - t0,
    cpuMs: usage.cpuMs,
    peakRssMb: usage.peakRssMb,
    load,
  };
}

/**
 * The controller's per-rank writes at a rank.started, alone and in-process with its own store
 * code (a fresh rankd.db): the rank's row updated and an event appended, for every rank of
 * the job, each its own transaction as the controller writes them, and in transactions of
 * BATCH ranks. Alternated, STORE_ROUNDS each; medians.
 */
const STORE_ROUNDS = 3;
const BATCH = 100;
function storeWrites(dir: string): { oneEachMs: number; batchedMs: number } {
  const world = NODES * RANKS_PER_NODE;
  const once = (k: number, batched: boolean): number => {
    const dataDir = path.join(dir, `store-${k}-${batched ? 'batched' : 'one'}`);
    mkdirSync(dataDir, { recursive: true });
    const db = openDatabase(dataDir);
    try {
      const jobs = new JobsRepo(db);
      const events = new EventsRepo(db);
      const now = Date.now();
      const job: JobRecord = {
        id: 'j',
        name: null,
        idempotencyKey: null,
        owner: null,
        state: 'starting',
        reason: '',
        submit: { command: COMMAND },
        rankMap: null,
        priority: 0,
        demand: null,
        allocation: null,
        exitCode: null,
        createdAt: now,
        startedAt: now,
        endedAt: null,
        attempt: 0,
        excluded: [],
        restartAt: null,
      };
      const ranks: RankRecord[] = Array.from({ length: world }, (_, rank) => ({
        jobId: 'j',
        attempt: 0,
        rank,
        node: `lsim${rank % 4}-${rank >> 3}`,
        state: 'pending',
        pid: null,
        startedAt: null,
        endedAt: null,
        exitCode: null,
        signal: null,
        binding: null,
        error: null,
        warnings: [],
        stdoutBytes: 0,
        stderrBytes: 0,
      }));
      jobs.create(job);
      // what RankEvents.started writes for each rank
      const started = (r: RankRecord) => {
        Object.assign(r, {
          state: 'running',
          pid: 100_000 + r.rank,
          startedAt: Date.now(),
          binding: { cpus: [r.rank % 16, (r.rank % 16) + 16], memNodes: [(r.rank % 16) >> 3], verified: true },
        });
        jobs.updateRank(r);
        events.append('rank.started', `j/${r.rank}`, { node: r.node, pid: r.pid });
      };
      const inOne = db.transaction((batch: RankRecord[]) => batch.forEach(started));
      const t = performance.now();
      if (batched) for (let i = 0; i < ranks.length; i += BATCH) inOne(ranks.slice(i, i + BATCH));
      else ranks.forEach(started);
      return performance.now() - t;
    } finally {
      db.close();
    }
  };
  const one: number[] = [];
  const batched: number[] = [];
  for (let k = 0; k < STORE_ROUNDS; k++) {
    one.push(once(k, false));
    batched.push(once(k, true));
  }
  return { oneEachMs: med(one), batchedMs: med(batched) };
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

function describeLaunch(l: Launch): string {
  return `answered ${ms(l.answeredMs)} (${(l.answerBytes / 1e6).toFixed(1)} MB), job.starts sent ${ms(l.dispatchedMs)}, last received ${ms(l.lastJobStartMs)}, all started ${ms(l.startedMs)}, succeeded ${ms(l.doneMs)}; controller ${ms(l.cpuMs)} CPU, peak RSS ${l.peakRssMb.toFixed(0)} MB; load ${l.load.toFixed(2)}`;
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const world = NODES * RANKS_PER_NODE;
  const size = `${n(NODES)} nodes × ${RANKS_PER_NODE} ranks (${n(world)} ranks of \`true\`)`;
  const labels = {
    started: `${size}: submit → every rank started (job running)`,
    done: `${size}: submit → job succeeded`,
    answered: `${size}: submit → POST /v1/jobs answered (planned, every job.start sent)`,
    cpu: `${size}: controller CPU time, submit → succeeded`,
    rss: `${size}: controller peak RSS during the launch`,
  };
  const rowsOf = (side: (key: keyof typeof labels) => Row['rankd']): Row[] => [
    { figure: labels.started, rankd: side('started'), goals: [STARTED_GOAL] },
    { figure: labels.done, rankd: side('done'), goals: [DONE_GOAL] },
    { figure: labels.answered, rankd: side('answered'), goals: [] },
    { figure: labels.cpu, rankd: side('cpu'), goals: [] },
    { figure: labels.rss, rankd: side('rss'), goals: [] },
  ];
  const notes: string[] = [];
  let limits = 'The figure did not get as far as a launch; see the table.';
  const report = (rows: Row[]): FigureReport => ({ rows, notes, limits, peersUsed: [] });
  const notRun = (why: string) => report(rowsOf(() => notMeasured(why)));

  const why = await whyNoFleet(ctx);
  if (why) return notRun(why);
  const loadAtStart = os.loadavg()[0]!;
  // before anything of the figure runs: the per-rank writes alone, for the limits
  const store = storeWrites(path.join(ctx.tmpDir, 'store'));
  ctx.log(
    `scale-launch: ${n(NODES * RANKS_PER_NODE)} rank.started writes alone: ${ms(store.oneEachMs)} one transaction each, ${ms(store.batchedMs)} in transactions of ${BATCH}`,
  );
  // the simulated nodes' facts: a captured dual-socket machine, or this one's with oversubscribe
  let simEnv: Record<string, string> = {};
  let placement: Record<string, unknown> = { nodes: NODES, ranksPerNode: RANKS_PER_NODE };
  let factsNote: string;
  const dump = listDumps(ctx.repoRoot)?.find((d) => d.tarball === DUMP);
  if (dump) {
    const root = await extractDump(ctx.repoRoot, dump, path.join(ctx.tmpDir, 'dump'));
    simEnv = { SIM_ROOT: root };
    factsNote = `Every simulated node reports the facts of hwloc's captured \`${DUMP.replace(/\.tar\.bz2$/, '')}\` (2 sockets × 8 cores × 2 threads, 2 NUMA nodes), read by the agent's own facts reader (SIM_ROOT), so 8 ranks a node fit without oversubscribing.`;
  } else {
    placement = { ...placement, oversubscribe: true };
    factsNote = `hwloc's corpus is absent, so every simulated node reports this ${os.availableParallelism()}-CPU machine's facts and the job asks for oversubscribe.`;
  }

  let fleet: Fleet;
  try {
    // the inspector port armed (closed until SIGUSR1) so that one launch can be profiled
    fleet = await startFleet(ctx, {
      agents: 0,
      prefix: 'launch',
      controllerEnv: { ...process.env, NODE_OPTIONS: armedNodeOptions(process.env) },
    });
  } catch (err) {
    return notRun(`the controller did not start: ${(err as Error).message}`);
  }
  let sims: SimFleet | undefined;
  let history: History | undefined;
  try {
    sims = await startSims(ctx, fleet, { agents: NODES, processes: SIM_PROCESSES, prefix: 'lsim', env: simEnv });
    history = new History(fleet.dataDir);
    const plan = await api<{
      worldSize: number;
      nodes: unknown[];
      schedule: { startsNow: boolean; reason: string | null };
    }>(fleet, 'POST', '/v1/plan', placement);
    if (plan.worldSize !== world || plan.nodes.length !== NODES || !plan.schedule.startsNow) {
      throw new Error(
        `POST /v1/plan gave ${plan.worldSize} ranks on ${plan.nodes.length} nodes (starts now: ${plan.schedule.startsNow}, ${plan.schedule.reason ?? ''}), not ${world} on ${NODES}`,
      );
    }
    ctx.log(`scale-launch: ${NODES} simulated agents ready; settling ${SETTLE_MS / 1000} s`);
    await sleep(SETTLE_MS);
    const restRssMb = (readRss(fleet.controller.pid)?.totalKb ?? 0) / 1024;
    await quiet(fleet.controller.pid);
    const warm = await launch(fleet, sims, history, placement);
    ctx.log(`scale-launch: warm-up ${warm.jobId}: ${describeLaunch(warm)}`);
    const launches: Launch[] = [];
    const rounds = Math.max(MIN_ROUNDS, ctx.rounds);
    for (let i = 0; i < rounds; i++) {
      await quiet(fleet.controller.pid);
      const l = await launch(fleet, sims, history, placement);
      launches.push(l);
      ctx.log(`scale-launch: round ${i + 1}/${rounds} ${l.jobId}: ${describeLaunch(l)}`);
    }

    // one more launch under the profiler, not counted: the sampling slows it
    let profile = null as ProfileSummary | null;
    let profiled: Launch | null = null;
    let profileWhy = '';
    try {
      await quiet(fleet.controller.pid);
      const session = await startProfile(fleet.controller.pid, fleet.controller.logFile, PROFILE_INTERVAL_US);
      let stopped = false;
      const stop = async () => {
        if (stopped) return;
        stopped = true;
        const raw = await session.stop();
        profile = summarizeProfile(raw, TOP, (url) => url.includes('/packages/'));
        const file = path.join(os.tmpdir(), `rankd-scale-launch-${Date.now()}.cpuprofile`);
        saveProfile(raw, file);
        ctx.log(`scale-launch: CPU profile of the controller over one launch in ${file}`);
      };
      try {
        // the profile ends with the job: the bench's own checks after it are not the launch
        profiled = await launch(fleet, sims, history, placement, stop);
      } finally {
        await stop();
      }
      ctx.log(`scale-launch: profiled ${profiled.jobId}: ${describeLaunch(profiled)}`);
      if (profile) {
        ctx.log(`scale-launch: self time: ${formatFrames(profile.self)}`);
        ctx.log(`scale-launch: total time: ${formatFrames(profile.total)}`);
        ctx.log(`scale-launch: by package: ${formatFrames(profile.packages)}`);
      }
    } catch (err) {
      profileWhy = (err as Error).message;
      ctx.log(`scale-launch: no profile: ${profileWhy}`);
    }

    const stat = (pick: (l: Launch) => number) => summarize(launches.map(pick));
    const rows = rowsOf((key) => {
      switch (key) {
        case 'started':
          return measured(
            'ms',
            stat((l) => l.startedMs),
          );
        case 'done':
          return measured(
            'ms',
            stat((l) => l.doneMs),
          );
        case 'answered':
          return measured(
            'ms',
            stat((l) => l.answeredMs),
          );
        case 'cpu':
          return measured(
            'ms',
            stat((l) => l.cpuMs),
          );
        case 'rss':
          return measured(
            'MB',
            stat((l) => l.peakRssMb),
          );
      }
    });
    const m = (pick: (l: Launch) => number) => ms(med(launches.map(pick)));
    limits = limitsText(launches, profile, store);
    notes.push(
      `One \`rankd controller\` (default timing) and ${SIM_PROCESSES} simulator processes × ${NODES / SIM_PROCESSES} WebSocket connections on 127.0.0.1, each connection an enrolled node with its own certificate (mTLS). ${factsNote} The job, \`${JSON.stringify({ command: COMMAND, placement })}\`, is submitted with POST /v1/jobs as \`rankd run\` does; POST /v1/plan first checked that it would start at once on ${n(NODES)} nodes. Each simulated node answers its job.start with a rank.started per rank (a pid, the start time, the planned CPUs and memory nodes as its binding, verified) and, \`true\` ending at once, a rank.exit per rank with code 0 and no output (SIM_EXIT_DELAY_MS=0).`,
      `Times are from the bench's Date.now() just before the POST to the controller's own Date.now() in its history (the events table of rankd.db, read-only, polled every ${POLL_MS} ms): job.state → running (the last rank.started handled) and → succeeded (the last rank.exit handled); each launch was checked to have ${n(world)} rank.started and ${n(world)} rank.exited events and to read \`succeeded\` through GET /v1/jobs. CPU time is the controller's utime+stime from /proc/<pid>/stat between the POST and the moment the bench saw the end (10-ms clock ticks), peak RSS from /proc/<pid>/status every 20 ms. ${launches.length} launches after an unmeasured warm-up, one after the other, each once the controller was back under ${QUIET_CPU * 100}% of a core; medians with min and max.`,
      `Medians of the steps, from submit: POST /v1/jobs answered ${m((l) => l.answeredMs)} (admission and planning of ${n(world)} ranks, the scheduling pass, and ${n(NODES)} job.start frames handed to their sockets, all before the answer), job → starting recorded ${m((l) => l.dispatchedMs)}, the first job.start received by a simulated node ${m((l) => l.firstJobStartMs)} and the last ${m((l) => l.lastJobStartMs)}, every rank started ${m((l) => l.startedMs)}, succeeded ${m((l) => l.doneMs)}. The controller's RSS was ${restRssMb.toFixed(0)} MB with the ${n(NODES)} nodes connected and no job.`,
      `Load average (1 min): ${loadAtStart.toFixed(2)} when the figure started, before any process of its own; at the start of each launch ${launches.map((l) => l.load.toFixed(2)).join(', ')}, raised by the figure itself (each launch keeps the controller and the ${SIM_PROCESSES} simulators busy for seconds). This ${os.availableParallelism()}-core machine runs the controller, the simulators (${n(NODES)} nodes' frames in and out) and the bench together, so their CPU is inside every time.`,
      profile && profiled
        ? `CPU profile of one more launch (not counted; V8's sampling profiler every ${PROFILE_INTERVAL_US} µs through the inspector, opened on loopback by SIGUSR1; it took ${ms(profiled.doneMs)} to succeed under the profiler): ${ms(profile.busyMs)} busy of ${ms(profile.wallMs)}. Self time, top ${TOP}: ${formatFrames(profile.self)}. rankd's own functions including their callees: ${formatFrames(profile.total)}. Self time by package: ${formatFrames(profile.packages)}.`
        : `No CPU profile: ${profileWhy}.`,
      enrollmentNote(sims),
    );
    return report(rows);
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

/** What bounds the launch, from the profile's own numbers where there is one. */
function limitsText(
  launches: Launch[],
  profile: ProfileSummary | null,
  store: { oneEachMs: number; batchedMs: number },
): string {
  const world = NODES * RANKS_PER_NODE;
  const started = med(launches.map((l) => l.startedMs));
  const done = med(launches.map((l) => l.doneMs));
  const cpu = med(launches.map((l) => l.cpuMs));
  const dispatched = med(launches.map((l) => l.dispatchedMs));
  const firstStart = med(launches.map((l) => l.firstJobStartMs));
  const lastStart = med(launches.map((l) => l.lastJobStartMs));
  const answered = med(launches.map((l) => l.answeredMs));
  const mb = med(launches.map((l) => l.answerBytes)) / 1e6;
  const share = (what: string) => profile?.packages.find((p) => p.what === what);
  const run = share('native (run)');
  const gc = share('(garbage collector)');
  const parts = [
    `A launch is one controller process on one core doing, in order: admission, planning and the scheduling pass for ${n(world)} ranks, their rows and the rank map in SQLite, ${n(NODES)} job.start frames; then for every rank a rank.started and a rank.exit frame to decode, validate and apply; then ${n(NODES)} job.release frames. The simulators answer as fast as they read, so the controller's own CPU time (median ${ms(cpu)} a launch) is nearly all of the wall time (${ms(done)} to succeed). Every rank has started only ${ms(done - started)} before the end: \`true\` ends at once, so each node's exits follow its starts on its link, and the last node's rank.started waits behind the frames of every node before it.`,
    run
      ? `What bounds it is that CPU time, spread thin: in the profile of one launch, better-sqlite3's Statement#run (\`run\`, native: the statements, commits included) is ${(run.share * 100).toFixed(0)}% of the controller's busy time${gc ? ` and the garbage collector ${(gc.share * 100).toFixed(0)}%` : ''}; the rest is decoding and validating ${n(2 * world)} frames, TLS, and the submit's planning and serialization (top frames below).`
      : 'Without a profile, what bounds it is not named here.',
    `The same ${n(world)} rank.started writes alone, with the controller's own store code on this machine, took ${ms(store.oneEachMs)} one transaction each and ${ms(store.batchedMs)} in transactions of ${BATCH} ranks. That is why the controller commits what agents report once per event-loop turn (store/write-batch.ts), holding its messages to agents until that commit and committing before any REST answer leaves, so nothing is told what a crash could undo.`,
    `The submit's own work (job.state → starting, median ${ms(dispatched)}) is planning, the ranks' rows and the rank map in one transaction, and ${n(NODES)} job.start frames (each node's shared environment once) built and written, the first received ${ms(firstStart)} and the last ${ms(lastStart)} after the submit. POST /v1/jobs answers with the whole job (its rank map and every rank, ${mb.toFixed(1)} MB), serialized with JSON.stringify around the rank map's JSON the store already made (fast-json-stringify took about ten times as long at this size); its last byte arrives ${ms(answered)} after the submit${answered > done ? ", after the job has ended, because it is written while the agents' frames pour in; `rankd run` reads that answer before it follows the job, so at this size it hears of the start after the end (its output is stored and replayed, not lost)" : ''}.`,
  ];
  if (profile) parts.push(`The profile's top frames by self time: ${formatFrames(profile.self.slice(0, 6))}.`);
  const gaps: string[] = [];
  if (started >= STARTED_GOAL.value)
    gaps.push(
      `every rank started ${ms(started - STARTED_GOAL.value)} over the 1-s goal (${(started / STARTED_GOAL.value).toFixed(1)}×)`,
    );
  if (done >= DONE_GOAL.value)
    gaps.push(
      `the job's end ${ms(done - DONE_GOAL.value)} over the 3-s goal (${(done / DONE_GOAL.value).toFixed(1)}×)`,
    );
  if (gaps.length > 0) parts.push(`Missed: ${gaps.join('; ')}.`);
  return parts.join(' ');
}
