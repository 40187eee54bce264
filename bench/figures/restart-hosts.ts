// restart-hosts: a gang restart across hosts. Three network namespaces are three hosts
// (bench/lib/netns.ts), each with a real `rankd agent`; the controller runs in a fourth.
// A job of 3 nodes × 2 ranks with --max-restarts 1, submitted with `rankd run` from the
// controller's namespace as a user would, fails on purpose: in attempt 0 rank 5 exits 1 a
// second after its start, while the others sleep. Fail-fast ends the others, the controller
// queues the job again and starts attempt 1 (`<job>-1` to the agents), whose ranks exit 0.
//
// Timed from the failed rank's exit, as its agent reported it (the ranks row's ended_at),
// to every rank of attempt 1 started: the last rank.started of `<job>-1/<rank>` in the
// controller's history (the events table of rankd.db, read-only). A second row ends at the
// ranks' own first line instead: each prints bash's $EPOCHREALTIME first thing, read back
// from the controller's stored output. All clocks are this machine's one clock.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { waitFor } from '../lib/child.js';
import {
  measured,
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
  type Row,
} from '../lib/figure.js';
import { whyNoNamespaces } from '../lib/netns.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';
import { summarize, type Stat } from '../lib/stats.js';
import { startNamespaceCluster, type NamespaceCluster } from '../rankd/namespace-cluster.js';
import { RestartHistory, TERMINAL, type StateEvent } from '../rankd/restart-history.js';

const HOSTS = 3;
const RANKS_PER_NODE = 2;
const WORLD = HOSTS * RANKS_PER_NODE;
/** The rank that fails attempt 0, and how long after its start. */
const FAILING_RANK = WORLD - 1;
const FAIL_AFTER_S = 1;
const ROUND_TIMEOUT_MS = 60_000;
const POLL_MS = 10;

const GOAL: Goal = { on: 'rankd', op: '<', value: 1000, text: '< 1 s' };

/**
 * Every rank prints when it runs; in attempt 0 the failing rank exits 1 after FAIL_AFTER_S
 * and the others wait to be ended; in attempt 1 every rank exits 0 at once. bash, for
 * $EPOCHREALTIME: the stamp costs no process of its own.
 */
const SCRIPT = [
  'echo "$EPOCHREALTIME"',
  'if [ "$RANKD_ATTEMPT" = 0 ]; then',
  `  if [ "$RANK" = ${FAILING_RANK} ]; then sleep ${FAIL_AFTER_S}; exit 1; fi`,
  '  exec sleep 120',
  'fi',
].join('\n');

export const restartHostsFigure: FigureDescriptor = {
  name: 'restart-hosts',
  title: `gang restart on ${HOSTS} namespace hosts × ${RANKS_PER_NODE} ranks`,
  peers: [],
  run,
};

interface Restart {
  jobId: string;
  /** Every time from the failed rank's exit (its agent's ended_at), in ms. */
  abortedMs: number;
  /** Attempt 0 closed: its last rank's end handled, the job queued again (the job.attempt event). */
  requeuedMs: number;
  /** Attempt 1 planned and its starts sent (job.allocated of attempt 1). */
  allocatedMs: number;
  startedMs: number;
  firstLineMs: number;
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const size = `${HOSTS} hosts × ${RANKS_PER_NODE} ranks, --max-restarts 1`;
  const labels = {
    started: `${size}: failed rank's exit → every rank of attempt 1 started (controller's history)`,
    firstLine: `${size}: failed rank's exit → every rank of attempt 1 printed its first line`,
  };
  const notes: string[] = [];
  let limits = 'The figure did not get as far as a restart; see the table.';
  const report = (rows: Row[]): FigureReport => ({ rows, notes, limits, peersUsed: [] });
  const notRun = (why: string) =>
    report([
      { figure: labels.started, rankd: notMeasured(why), goals: [GOAL] },
      { figure: labels.firstLine, rankd: notMeasured(why), goals: [] },
    ]);

  const why = whyNoNamespaces() ?? (await missingCommand(ctx.repoRoot, 'run'));
  if (why) return notRun(why);
  mkdirSync(ctx.tmpDir, { recursive: true });
  let cluster: NamespaceCluster | undefined;
  let history: RestartHistory | undefined;
  try {
    cluster = await startNamespaceCluster(ctx, { hosts: HOSTS, label: 'bench restart-hosts' });
    history = new RestartHistory(cluster.dataDir);
    const warm = await restartOnce(ctx, cluster, history);
    ctx.log(`restart-hosts: warm-up ${warm.jobId}: ${describe(warm)}`);
    const rounds: Restart[] = [];
    for (let i = 0; i < ctx.rounds; i++) {
      const r = await restartOnce(ctx, cluster, history);
      rounds.push(r);
      ctx.log(`restart-hosts: round ${i + 1}/${ctx.rounds} ${r.jobId}: ${describe(r)}`);
    }
    const stat = (pick: (r: Restart) => number) => summarize(rounds.map(pick));
    limits = limitsText(stat);
    notes.push(...notesText(rounds.length));
    return report([
      {
        figure: labels.started,
        rankd: measured(
          'ms',
          stat((r) => r.startedMs),
        ),
        goals: [GOAL],
      },
      {
        figure: labels.firstLine,
        rankd: measured(
          'ms',
          stat((r) => r.firstLineMs),
        ),
        goals: [],
      },
    ]);
  } catch (err) {
    return notRun((err as Error).message);
  } finally {
    history?.close();
    await cluster?.net.teardown();
  }
}

function limitsText(stat: (pick: (r: Restart) => number) => Stat): string {
  const med = (pick: (r: Restart) => number) => `${Math.round(stat(pick).median)} ms`;
  return (
    "Counted from the failed rank's exit, the controller hears of it from the agent and stops the attempt " +
    `(job.stopping at ${med((r) => r.abortedMs)}), asks the three agents to end the other ranks (SIGTERM to ` +
    `\`sleep\`), closes attempt 0 once every exit is in and queues the job again (at ${med((r) => r.requeuedMs)}), ` +
    `plans attempt 1 (at ${med((r) => r.allocatedMs)}), then each agent starts its two ranks (bash, no Python) ` +
    `and reports them (at ${med((r) => r.startedMs)}). What bounds it on this 2-core machine is process start-up ` +
    'and the round trips between four namespaces over one bridge; nothing waits on a timer (--restart-delay is 0 ' +
    'and the first restart has no backoff).'
  );
}

function notesText(rounds: number): string[] {
  return [
    `One \`rankd controller\` (default timing) in its own network namespace and one \`rankd agent\` in each of ` +
      `${HOSTS} more, on one bridge (10.77.<n>.0/24, guarded by an unreachable route in the root namespace); all on ` +
      `this machine's CPUs. The job is \`rankd run -q -N ${HOSTS} --ranks-per-node ${RANKS_PER_NODE} ` +
      "--max-restarts 1 -- bash -c SCRIPT`, run from the controller's namespace: each rank echoes $EPOCHREALTIME; " +
      `in attempt 0 rank ${FAILING_RANK} exits 1 after ${FAIL_AFTER_S} s and the others ` +
      '`exec sleep 120`; in attempt 1 every rank exits 0. Each round checked that `rankd run` exited 0 and that the ' +
      `history holds ${WORLD} rank.started of attempt 1.`,
    "Start: the failed rank's end as its agent reported it (ended_at of the ranks row of attempt 0). End: the " +
      "controller's last rank.started of `<job>-1` (its Date.now() when it recorded it), and, in the second row, the " +
      "latest of the ranks' own first lines (bash's $EPOCHREALTIME, read from the controller's stored output of " +
      `\`<job>-1\`). One clock: every process runs on this machine. ${rounds} rounds after an unmeasured warm-up, ` +
      'one after the other; medians with min and max.',
  ];
}

function describe(r: Restart): string {
  return (
    `stopping ${Math.round(r.abortedMs)} ms, requeued ${Math.round(r.requeuedMs)} ms, attempt 1 allocated ` +
    `${Math.round(r.allocatedMs)} ms, all started ${Math.round(r.startedMs)} ms, last first line ` +
    `${Math.round(r.firstLineMs)} ms`
  );
}

/** One job through its failed attempt 0 and its attempt 1, timed from its history. */
async function restartOnce(ctx: BenchContext, c: NamespaceCluster, history: RestartHistory): Promise<Restart> {
  const before = history.newestJob();
  const argv = rankdArgv(ctx.repoRoot, [
    'run',
    '-q',
    '-N',
    String(HOSTS),
    '--ranks-per-node',
    String(RANKS_PER_NODE),
    '--max-restarts',
    '1',
    '--',
    'bash',
    '-c',
    SCRIPT,
  ]);
  // runIn rejects unless `rankd run` exits 0: its exit code is the last attempt's
  const cli = c.net.runIn(c.net.controller, argv, { env: c.clientEnv, timeoutMs: ROUND_TIMEOUT_MS }).then(
    () => null,
    (err: Error) => err,
  );
  let jobId: string | null = null;
  let states: StateEvent[] = [];
  const ended = await waitFor(
    () => {
      const newest = history.newestJob();
      if (jobId === null && newest !== before) jobId = newest;
      return jobId !== null && (states = history.jobStates(jobId)).some((s) => TERMINAL.has(s.to));
    },
    ROUND_TIMEOUT_MS,
    POLL_MS,
  );
  const cliError = await cli;
  if (!jobId) throw new Error(`\`rankd run\` submitted no job: ${cliError?.message ?? 'no error'}`);
  if (!ended) throw new Error(`job ${jobId} did not end within ${ROUND_TIMEOUT_MS / 1000} s`);
  const id: string = jobId;
  const final = states.find((s) => TERMINAL.has(s.to))!;
  if (final.to !== 'succeeded') throw new Error(`job ${id} ended ${final.to}: ${final.reason}`);
  if (cliError) throw new Error(`\`rankd run\` failed although job ${id} succeeded: ${cliError.message}`);
  const failed = history.rank(id, 0, FAILING_RANK);
  if (failed.endedAt === null) throw new Error(`job ${id}: rank ${FAILING_RANK} of attempt 0 has no end`);
  const t0 = failed.endedAt;
  const attempt1 = `${id}-1`;
  const started = history.rankSpan(attempt1, 'rank.started');
  if (started.count !== WORLD || started.last === null)
    throw new Error(`job ${id}: ${started.count} rank.started of attempt 1 recorded, not ${WORLD}`);
  const at = (kind: string, attempt: number) => {
    const e = history.events(id, kind).find((x) => Number(x.data['attempt']) === attempt);
    if (!e) throw new Error(`job ${id} has no ${kind} of attempt ${attempt} in its history`);
    return e.at - t0;
  };
  return {
    jobId: id,
    abortedMs: at('job.stopping', 0),
    requeuedMs: at('job.attempt', 0),
    allocatedMs: at('job.allocated', 1),
    startedMs: started.last - t0,
    firstLineMs: Math.max(...Array.from({ length: WORLD }, (_, r) => firstLine(c.dataDir, attempt1, r))) - t0,
  };
}

/** The rank's first line, bash's $EPOCHREALTIME (seconds, µs), in ms, from the controller's stored output. */
function firstLine(dataDir: string, attemptId: string, rank: number): number {
  const file = path.join(dataDir, 'logs', attemptId, `${rank}.stdout`);
  const line = readFileSync(file, 'utf8').split('\n')[0] ?? '';
  const seconds = Number(line.replace(',', '.'));
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`${file}: no time on its first line ("${line}")`);
  return seconds * 1000;
}
