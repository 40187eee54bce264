// slurm: rankd inside a Slurm allocation of 3 namespace hosts (figures/slurm-hosts.ts: a
// real slurmctld and 3 slurmd). One `salloc -N 3 --immediate` is held for the whole figure;
// every command runs on the login node with the allocation's environment, as typed at
// salloc's prompt. Each round, in this order:
//
// - up: `rankd up --slurm --detach`, from spawn to its exit; it exits once every node of
//   the allocation is ready (controller step, agents step, enrollment);
// - run: `rankd run -N 3 -- true` against that instance, the first job after it, the
//   default way (the rank map printed);
// - srun: `srun -N 3 --ntasks-per-node=1 true`, a step of the same allocation beside
//   rankd's steps (--overlap: rankd's steps hold the nodes' CPUs);
// - down: `rankd down`, timed on its own row; the instance directory must be gone after it.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from '../lib/child.js';
import {
  notMeasured,
  type BenchContext,
  type FigureDescriptor,
  type FigureReport,
  type Goal,
  type Row,
} from '../lib/figure.js';
import { createHostNetwork, whyNoNamespaces, type HostNetwork } from '../lib/netns.js';
import { runProcess } from '../lib/process-timing.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';
import { compareArms, comparisonRow, type Candidate } from '../lib/rows.js';
import { runBreakdown, upBreakdown } from './slurm-breakdown.js';
import { holdAllocation, startSlurmHosts, whyNoSlurm, type Allocation, type SlurmHosts } from './slurm-hosts.js';

const HOSTS = 3;
const UP_TIMEOUT_MS = 60_000;
const JOB_TIMEOUT_MS = 30_000;

const ARM = {
  up: `rankd up --slurm --detach`,
  run: `rankd run -N ${HOSTS} -- true`,
  srun: `srun -N ${HOSTS} --ntasks-per-node=1 --overlap true`,
  down: 'rankd down',
} as const;
const UP_LABEL = `\`rankd up --slurm\` on ${HOSTS} namespace hosts: command → every node ready`;
const RUN_LABEL = `first job after it, ${HOSTS} nodes × 1 rank of \`true\`, in the same allocation`;
const DOWN_LABEL = '`rankd down`: the instance ended, its directory gone';
const UP_GOALS: Goal[] = [{ on: 'rankd', op: '<', value: 3, text: '< 3 s' }];
const RUN_GOALS: Goal[] = [{ on: 'ratio', op: '<=', value: 1.5, text: '≤ 1.5× srun' }];

export const slurmFigure: FigureDescriptor = {
  name: 'slurm',
  title: `rankd inside a Slurm allocation of ${HOSTS} namespace hosts: up, first job against srun, down`,
  peers: ['srun'],
  run,
};

/** The instance the round's `up` started, for the arms after it. */
interface RoundState {
  home: string | null;
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const notes: string[] = [];
  const report = (rows: Row[]): FigureReport => ({ rows, notes, limits: LIMITS, peersUsed: ['srun'] });
  const why =
    whyNoNamespaces() ??
    whyNoSlurm() ??
    (await missingCommand(ctx.repoRoot, 'up')) ??
    (await missingCommand(ctx.repoRoot, 'down'));
  if (why) return report(notMeasuredRows(why));
  const dir = path.join(ctx.tmpDir, 'slurm');
  mkdirSync(dir, { recursive: true });
  let net: HostNetwork | undefined;
  let slurm: SlurmHosts | undefined;
  let allocation: Allocation | undefined;
  try {
    net = createHostNetwork(HOSTS);
    slurm = await startSlurmHosts(net, dir, os.availableParallelism());
    allocation = await holdAllocation(net, slurm, dir);
    ctx.log(`slurm: job ${allocation.jobId} holds ${HOSTS} namespace hosts of ${net.cidr}`);
    const n = net;
    const a = allocation;
    const state: RoundState = { home: null };
    const candidates: Candidate[] = [
      { name: ARM.up, sample: () => up(ctx, n, a, state) },
      { name: ARM.run, sample: () => rankdRun(ctx, n, a, state) },
      { name: ARM.srun, sample: () => srun(n, a) },
      { name: ARM.down, sample: () => down(ctx, n, a, state) },
    ];
    const cmp = await compareArms(candidates, { rounds: ctx.rounds, unit: 's', log: ctx.log });
    if (state.home) await endSteps(n, a, state);
    notes.push(await breakdown(ctx, n, a, state, path.join(dir, 'logs')));
    notes.push(...notesText(allocation.jobId));
    return report([
      comparisonRow(cmp, UP_LABEL, ARM.up, null, UP_GOALS),
      comparisonRow(cmp, RUN_LABEL, ARM.run, { arm: ARM.srun, label: ARM.srun }, RUN_GOALS),
      comparisonRow(cmp, DOWN_LABEL, ARM.down, null, []),
    ]);
  } catch (err) {
    return report(notMeasuredRows((err as Error).message));
  } finally {
    await allocation?.release();
    await slurm?.stop();
    await net?.teardown();
  }
}

function notMeasuredRows(why: string): Row[] {
  return [
    { figure: UP_LABEL, rankd: notMeasured(why), goals: UP_GOALS },
    {
      figure: RUN_LABEL,
      rankd: notMeasured(why),
      peer: { name: ARM.srun, side: notMeasured(`not run: ${why}`) },
      goals: RUN_GOALS,
    },
  ];
}

/** The allocation's environment without the bench's own RANKD_* (a RANKD_HOME would point elsewhere). */
function rankdEnv(a: Allocation, home?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(a.env)) if (!k.startsWith('RANKD_')) env[k] = v;
  if (home) env['RANKD_HOME'] = home;
  return env;
}

/** Runs argv on the login node inside the allocation; seconds from spawn to drained output, or an error. */
async function timed(
  net: HostNetwork,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ s: number; stdout: string }> {
  const r = await runProcess(net.argvIn(net.controller, argv), { env, timeoutMs, captureStdout: true });
  if (r.timedOut || r.code !== 0) {
    const how = r.timedOut ? 'timed out' : `exited ${r.code ?? r.signal}`;
    throw new Error(`${argv.slice(2).join(' ')} ${how}: ${r.stderrTail.trim().split('\n').slice(-3).join(' | ')}`);
  }
  return { s: r.ms / 1000, stdout: r.stdout };
}

async function up(ctx: BenchContext, net: HostNetwork, a: Allocation, state: RoundState): Promise<number> {
  // a round whose `rankd down` failed (or was dropped) left its instance: ended without rankd
  if (state.home) await endSteps(net, a, state);
  const r = await timed(net, rankdArgv(ctx.repoRoot, ['up', '--slurm', '--detach']), rankdEnv(a), UP_TIMEOUT_MS);
  const home = /^export RANKD_HOME=(.+)$/m.exec(r.stdout)?.[1]?.replace(/^'(.*)'$/, '$1');
  if (!home) throw new Error(`rankd up --slurm printed no "export RANKD_HOME=…": ${r.stdout.trim()}`);
  state.home = home;
  return r.s;
}

async function rankdRun(ctx: BenchContext, net: HostNetwork, a: Allocation, state: RoundState): Promise<number> {
  if (!state.home) throw new Error('no instance: rankd up did not run this round');
  const argv = rankdArgv(ctx.repoRoot, ['run', '-N', String(HOSTS), '--', 'true']);
  return (await timed(net, argv, rankdEnv(a, state.home), JOB_TIMEOUT_MS)).s;
}

async function srun(net: HostNetwork, a: Allocation): Promise<number> {
  const argv = ['srun', `--nodes=${HOSTS}`, '--ntasks-per-node=1', '--overlap', 'true'];
  return (await timed(net, argv, a.env, JOB_TIMEOUT_MS)).s;
}

/** One more instance, with --keep, not measured: where its time went, from its logs and Slurm's. */
async function breakdown(
  ctx: BenchContext,
  net: HostNetwork,
  a: Allocation,
  state: RoundState,
  slurmLogs: string,
): Promise<string> {
  try {
    const spawned = Date.now();
    const argv = rankdArgv(ctx.repoRoot, ['up', '--slurm', '--detach', '--keep']);
    const r = await timed(net, argv, rankdEnv(a), UP_TIMEOUT_MS);
    const exited = Date.now();
    state.home = /^export RANKD_HOME=(.+)$/m.exec(r.stdout)?.[1]?.replace(/^'(.*)'$/, '$1') ?? null;
    if (!state.home) throw new Error('it printed no "export RANKD_HOME=…"');
    const text = upBreakdown(state.home, slurmLogs, a.jobId, { spawned, exited });
    const runStart = Date.now();
    await rankdRun(ctx, net, a, state);
    const runText = runBreakdown(state.home, { spawned: runStart, exited: Date.now() });
    return `Where the time goes (one more instance, with --keep, not counted): ${text} Then ${runText}`;
  } catch (err) {
    return `No breakdown of \`rankd up --slurm\`: ${(err as Error).message}`;
  } finally {
    await endSteps(net, a, state).catch(() => undefined);
  }
}

/** `rankd down`; when it fails, the bench ends the steps itself (so the next round starts clean), and the arm is dropped. */
async function down(ctx: BenchContext, net: HostNetwork, a: Allocation, state: RoundState): Promise<number> {
  const home = state.home;
  if (!home) throw new Error('no instance: rankd up did not run this round');
  try {
    const r = await timed(net, rankdArgv(ctx.repoRoot, ['down']), rankdEnv(a, home), UP_TIMEOUT_MS);
    if (existsSync(home)) throw new Error(`rankd down exited 0 but left the instance directory ${home}`);
    state.home = null;
    return r.s;
  } catch (err) {
    await endSteps(net, a, state);
    throw err;
  }
}

/**
 * Ends rankd's steps without rankd (Slurm's own cancel, by the step ids squeue lists for
 * the job) and removes the instance directory: only after a failed `rankd down`.
 */
async function endSteps(net: HostNetwork, a: Allocation, state: RoundState): Promise<void> {
  const steps = async () =>
    (await timed(net, ['squeue', '--steps', `--jobs=${a.jobId}`, '--noheader', '--format=%i %j'], a.env, 10_000)).stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter(([id, name]) => id && (name === 'rankd-controller' || name === 'rankd-agents'))
      .map(([id]) => id!);
  const left = await steps();
  if (left.length > 0) await timed(net, ['scancel', ...left], a.env, 10_000).catch(() => undefined);
  const gone = await waitFor(async () => (await steps()).length === 0, 20_000, 250);
  if (!gone) throw new Error(`rankd's steps of job ${a.jobId} did not end after scancel`);
  if (state.home) rmSync(state.home, { recursive: true, force: true });
  state.home = null;
}

const LIMITS =
  'All 4 Slurm daemons, the rankd controller, 3 agents and every client share this 2-CPU machine, so each ' +
  "number is bounded by CPU, not by the network: `rankd up` pays its own Node start, Slurm's two steps (srun, " +
  "slurmctld, a slurmstepd per node), a Node start per daemon, the controller's TLS set-up and each agent's " +
  "enrollment and first facts, then polls until every node is ready. srun's `true` is Slurm's step path alone; " +
  "rankd's job adds a Node CLI start and the controller ↔ agent round trip.";

function notesText(jobId: string): string[] {
  return [
    `A real Slurm 22.05 on ${HOSTS} network-namespace hosts of this machine (slurmctld on a fourth, the login node; ` +
      'auth/none, proctrack/linuxproc, task/affinity: steps are not cgroup-confined here, unlike ' +
      "test/cluster's rig). One `salloc -N 3 --immediate` (job " +
      `${jobId}) held for the whole figure; every command ran on the login node with the allocation's environment, and SLURM_TMPDIR set to a directory of the bench's own (job ids restart at 1 with each throw-away Slurm, so /tmp/rankd-<job> could be another run's): \`rankd up --slurm\` keeps its instance in $SLURM_TMPDIR/rankd.`,
    'Each round: `rankd up --slurm --detach` (timed to its exit: it exits once every node is ready), then ' +
      `\`${ARM.run}\` and \`${ARM.srun}\` in turn (the ratio is within the round), then \`rankd down\` ` +
      '(its own row; the round fails if the instance directory is left). One unmeasured warm-up round first.',
    'The rankd ranks run as root: the ephemeral agents run ranks as the user who started them, root here.',
  ];
}
