// netcheck: the whole pairwise matrix of 8 namespace hosts (bench/rankd/namespace-cluster.ts:
// a controller and 8 real agents), from command to result, side by side with the same probes
// run the way a person scripts them by hand.
//
// - rankd: `rankd check net --duration 2 --json`, from the controller's namespace. The
//   circle method runs 7 rounds of 4 disjoint pairs, each pair one `iperf3 --bidir -t 2`
//   started by the agents on ports the controller offers.
// - pair by pair: the same 28 probes one after another, each an `iperf3 -s -1` in the
//   second host's namespace and `iperf3 -c … --bidir -t 2 -J` in the first's (what a loop
//   of `ssh hostB iperf3 -s -1 &; ssh hostA iperf3 -c hostB …` does), the client started
//   as soon as the server listens. Its total time.
//
// Both sides must measure every pair both ways, or the round fails: rankd's JSON has 56
// links, none failed; each iperf3 client exits 0 with a result. A link flagged as slow is
// not a failure here (see the notes): the figure times the check, not the veths.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../lib/child.js';
import {
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
  type Row,
} from '../lib/figure.js';
import { whyNoNamespaces, type Namespace } from '../lib/netns.js';
import { runProcess, timeProcess } from '../lib/process-timing.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';
import { compareArms, comparisonRow, type Candidate } from '../lib/rows.js';
import { which } from '../lib/which.js';
import { startNamespaceCluster, type NamespaceCluster } from '../rankd/namespace-cluster.js';

const HOSTS = 8;
const DURATION_S = 2;
const PAIRS = (HOSTS * (HOSTS - 1)) / 2;
const ROUNDS = HOSTS - 1;
/** The issue's bound: (N−1) rounds of the probe duration, plus 3 s. */
const BOUND_S = ROUNDS * DURATION_S + 3;
/** iperf3's own port: one server at a time, so the default serves, as in a hand-written loop. */
const IPERF3_PORT = 5201;
const CHECK_TIMEOUT_MS = 180_000;
/** A client past its duration by this much is ended, and the round fails. */
const PROBE_MARGIN_MS = 10_000;
const LISTEN_WAIT_MS = 5000;

const ARM = {
  rankd: `rankd check net --duration ${DURATION_S}`,
  pairs: `iperf3 pair by pair (${PAIRS} × -s -1 / -c --bidir -t ${DURATION_S} -J)`,
} as const;
const LABEL = `${HOSTS} namespace hosts, ${PAIRS} pairs both ways, ${DURATION_S} s probes: command → result`;
const GOALS: Goal[] = [
  { on: 'rankd', op: '<=', value: BOUND_S, text: `≤ ${BOUND_S} s ((N−1) × ${DURATION_S} s + 3 s)` },
  { on: 'ratio', op: '<=', value: 0.3, text: '≤ 0.3× pair by pair' },
];

export const netcheckFigure: FigureDescriptor = {
  name: 'netcheck',
  title: `the pairwise matrix of ${HOSTS} namespace hosts: rankd check net against iperf3 pair by pair`,
  peers: [],
  run,
};

/** What the rounds saw besides their times: for the notes. */
interface Seen {
  flaggedLinks: number[];
  medianBps: number[];
  pairBps: number[];
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const notes: string[] = [];
  const seen: Seen = { flaggedLinks: [], medianBps: [], pairBps: [] };
  const report = (rows: Row[]): FigureReport => ({ rows, notes, limits: limits(seen), peersUsed: [] });
  const why =
    whyNoNamespaces() ??
    (which('iperf3') ? null : '`iperf3` is not installed (Debian package iperf3)') ??
    (await missingCommand(ctx.repoRoot, 'check'));
  if (why) return report([{ figure: LABEL, rankd: notMeasured(why), peer: peerNotRun(why), goals: GOALS }]);
  mkdirSync(ctx.tmpDir, { recursive: true });
  let cluster: NamespaceCluster | undefined;
  try {
    cluster = await startNamespaceCluster(ctx, { hosts: HOSTS, label: 'bench netcheck' });
    const c = cluster;
    const candidates: Candidate[] = [
      { name: ARM.rankd, sample: () => rankdCheck(ctx, c, seen) },
      { name: ARM.pairs, sample: () => pairByPair(ctx, c, seen) },
    ];
    const cmp = await compareArms(candidates, { rounds: ctx.rounds, unit: 's', log: ctx.log });
    notes.push(...notesText(seen));
    return report([comparisonRow(cmp, LABEL, ARM.rankd, { arm: ARM.pairs, label: ARM.pairs }, GOALS)]);
  } catch (err) {
    const message = (err as Error).message;
    return report([{ figure: LABEL, rankd: notMeasured(message), peer: peerNotRun(message), goals: GOALS }]);
  } finally {
    await cluster?.net.teardown();
  }
}

function peerNotRun(why: string): Row['peer'] {
  return { name: ARM.pairs, side: notMeasured(`not run: ${why}`) };
}

interface NetCheckJson {
  rounds: number;
  roundsRun: number;
  links: Array<{ src: string; dst: string; error: string | null; flagged: boolean }>;
  rails: Array<{ medianBps: number | null }>;
}

/** `rankd check net` from the controller's namespace; seconds from spawn to its drained output. */
async function rankdCheck(ctx: BenchContext, c: NamespaceCluster, seen: Seen): Promise<number> {
  const argv = rankdArgv(ctx.repoRoot, ['check', 'net', '--duration', String(DURATION_S), '--json']);
  const run = await runProcess(c.net.argvIn(c.net.controller, argv), {
    env: { ...process.env, ...c.clientEnv },
    timeoutMs: CHECK_TIMEOUT_MS,
    captureStdout: true,
  });
  // exit 1 means something was flagged: the check ran to its end, and its JSON says what
  if (run.timedOut || (run.code !== 0 && run.code !== 1))
    throw new Error(
      `rankd check net ${run.timedOut ? 'timed out' : `exited ${run.code ?? run.signal}`}: ${run.stderrTail.trim()}`,
    );
  const result = JSON.parse(run.stdout) as NetCheckJson;
  const failed = result.links.filter((l) => l.error !== null);
  if (result.roundsRun !== ROUNDS || result.links.length !== 2 * PAIRS || failed.length > 0)
    throw new Error(
      `rankd check net ran ${result.roundsRun} of ${ROUNDS} rounds, ${result.links.length} of ${2 * PAIRS} links, ` +
        `${failed.length} failed${failed[0] ? ` (${failed[0].src}→${failed[0].dst}: ${failed[0].error})` : ''}`,
    );
  seen.flaggedLinks.push(result.links.filter((l) => l.flagged).length);
  if (result.rails[0]?.medianBps) seen.medianBps.push(result.rails[0].medianBps);
  return run.ms / 1000;
}

/** The 28 probes one after another, each a fresh server and client; seconds for all of them. */
async function pairByPair(ctx: BenchContext, c: NamespaceCluster, seen: Seen): Promise<number> {
  const hosts = c.net.hosts;
  const started = process.hrtime.bigint();
  for (let i = 0; i < hosts.length; i++)
    for (let j = i + 1; j < hosts.length; j++) seen.pairBps.push(await probePair(ctx, c, hosts[i]!, hosts[j]!));
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** One probe: b serves once, a measures both directions; the median of the two directions, in bit/s. */
async function probePair(ctx: BenchContext, c: NamespaceCluster, a: Namespace, b: Namespace): Promise<number> {
  const server = c.net.startIn(
    b,
    `iperf3 -s on ${b.name}`,
    ['iperf3', '-s', '-1', '-B', b.address, '-p', String(IPERF3_PORT)],
    { logFile: path.join(ctx.tmpDir, 'iperf3-servers.log') },
  );
  const serverDone = new Promise<void>((resolve) =>
    server.exited ? resolve() : server.child.once('exit', () => resolve()),
  );
  try {
    if (!(await waitFor(() => server.exited || listening(server.pid, IPERF3_PORT), LISTEN_WAIT_MS, 2)))
      throw new Error(`iperf3 -s on ${b.name} did not listen within ${LISTEN_WAIT_MS} ms`);
    if (server.exited) throw new Error(`iperf3 -s on ${b.name} exited before it listened (see ${server.logFile})`);
    const client = ['iperf3', '-c', b.address, '-p', String(IPERF3_PORT), '-B', a.address];
    client.push('--bidir', '-t', String(DURATION_S), '-J');
    const run = await timeProcess(c.net.argvIn(a, client), {
      timeoutMs: DURATION_S * 1000 + PROBE_MARGIN_MS,
      captureStdout: true,
    });
    const json = JSON.parse(run.stdout) as {
      error?: string;
      end?: { sum_received?: { bits_per_second?: number }; sum_received_bidir_reverse?: { bits_per_second?: number } };
    };
    const forward = json.end?.sum_received?.bits_per_second;
    const reverse = json.end?.sum_received_bidir_reverse?.bits_per_second;
    if (json.error || !forward || !reverse)
      throw new Error(`iperf3 ${a.name} → ${b.name}: ${json.error ?? 'no result in both directions'}`);
    // `-1`: the server ends with the test; waiting for it keeps the next probe off its port
    await Promise.race([serverDone, sleep(LISTEN_WAIT_MS)]);
    return (forward + reverse) / 2;
  } finally {
    await server.stop(1000);
  }
}

/**
 * Whether `pid` listens on TCP `port` in its own network namespace. /proc/PID/net/tcp is the
 * table of the process's namespace; until `ip netns exec` has switched it and exec'd iperf3,
 * it is the root namespace's, so the program's name is checked first.
 */
function listening(pid: number, port: number): boolean {
  try {
    if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'iperf3') return false;
    const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
    return readFileSync(`/proc/${pid}/net/tcp`, 'utf8')
      .split('\n')
      .some((line) => {
        const f = line.trim().split(/\s+/);
        return f[1]?.endsWith(`:${hexPort}`) === true && f[3] === '0A';
      });
  } catch {
    return false;
  }
}

function median(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function gbit(bps: number | null): string {
  return bps === null ? '—' : `${(bps / 1e9).toFixed(1)} Gbit/s`;
}

function limits(seen: Seen): string {
  return (
    `The circle method runs ${ROUNDS} rounds of ${HOSTS / 2} pairs at once, so rankd's floor is ${ROUNDS} × ` +
    `${DURATION_S} s = ${ROUNDS * DURATION_S} s of traffic; the pair-by-pair loop's is ${PAIRS} × ${DURATION_S} s = ` +
    `${PAIRS * DURATION_S} s, and the ratio's floor ${(ROUNDS / PAIRS).toFixed(2)}×. ` +
    'Above the floors: per round, the ' +
    'controller asks one agent to serve and waits for its port to listen, then asks the other to measure (two ' +
    'WebSocket round trips and two iperf3 start-ups per pair, the slowest pair of the round setting its end), and ' +
    "the CLI's own start-up once; per pair of the loop, `ip netns exec` and two iperf3 start-ups. On this 2-core " +
    `machine ${HOSTS / 2} concurrent --bidir probes are bound by the CPUs, not by the veths` +
    (seen.medianBps.length > 0 ? ` (rail median ${gbit(median(seen.medianBps))} in rankd's rounds, ` : ' (') +
    `${gbit(median(seen.pairBps))} per pair alone in the loop); the traffic's duration is fixed, so this spreads ` +
    'the bandwidths, not the times.'
  );
}

function notesText(seen: Seen): string[] {
  const flagged = median(seen.flaggedLinks);
  return [
    `One \`rankd controller\` in its own network namespace and one \`rankd agent\` in each of ${HOSTS} more, on one ` +
      'bridge (10.77.<n>.0/24, guarded by an unreachable route in the root namespace); all on this machine. rankd: ' +
      `\`rankd check net --duration ${DURATION_S} --json\` from the controller's namespace, timed from spawn to the ` +
      `end of its output; each round checked ${ROUNDS} rounds run and ${2 * PAIRS} links, none failed.`,
    `Pair by pair: for each of the ${PAIRS} pairs (host1–host2, host1–host3, …) in turn, ` +
      `\`iperf3 -s -1 -B B -p ` +
      `${IPERF3_PORT}\` in B's namespace, the client started once /proc shows the server listening, then ` +
      `\`iperf3 -c B -p ${IPERF3_PORT} -B A --bidir -t ${DURATION_S} -J\` in A's, to its exit and the server's; ` +
      'the loop in the bench (no ssh), each program under `ip netns exec`. Each client had to exit 0 with a result ' +
      'in both directions.',
    'Sides take turns round by round after one unmeasured warm-up each; the ratio is rankd ÷ pair by pair within ' +
      'each round.' +
      (flagged === null
        ? ''
        : ` rankd flagged a median of ${flagged} of ${2 * PAIRS} links per check at the default threshold (80 % of ` +
          "the rail's median): concurrent probes on 2 CPUs spread the veths' bandwidth; exit 1 was accepted."),
  ];
}
