// netcheck-preflight: what `rankd run --preflight` adds to a job's start. On 8 namespace
// hosts (bench/rankd/namespace-cluster.ts), `rankd run --preflight -N 8 -- /bin/true` and
// `rankd run -N 8 -- /bin/true` take turns round by round, both from the controller's
// namespace and timed from spawn to the end of their output; the row that counts is their
// difference within each round. The preflight is one round of the check's schedule with 1 s
// probes on the job's nodes, before the ranks start. Its threshold is 0.3, as in the
// namespace tests: these veths are bound by the VM's 2 CPUs, so healthy links spread from
// about 40 % to 150 % of their median, and at the default 0.8 a squeezed pair would fail a job
// that has no spare node.
//
// A CLI built without the flag makes the figure fail with that message instead of timing a
// run without it.
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { promisify } from 'node:util';
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
import { timeProcess } from '../lib/process-timing.js';
import { missingCommand, rankdArgv } from '../lib/rankd.js';
import { compareArms, comparisonRow, type Candidate } from '../lib/rows.js';
import { summarize } from '../lib/stats.js';
import { which } from '../lib/which.js';
import { startNamespaceCluster, type NamespaceCluster } from '../rankd/namespace-cluster.js';

const execFileAsync = promisify(execFile);

const HOSTS = 8;
const RUN_TIMEOUT_MS = 120_000;
const JOB = ['-N', String(HOSTS), '--', '/bin/true'];
const PREFLIGHT = ['--preflight', '--preflight-threshold', '0.3'];
const ARM = {
  preflight: `rankd run --preflight --preflight-threshold 0.3 -N ${HOSTS} -- /bin/true`,
  plain: `rankd run -N ${HOSTS} -- /bin/true`,
} as const;
const LABELS = {
  both: `a job of ${HOSTS} namespace hosts × 1 rank of /bin/true, command → exit`,
  added: `added by --preflight on ${HOSTS} hosts (per round: with − without)`,
};
const GOAL: Goal = { on: 'rankd', op: '<', value: 10, text: '< 10 s' };

export const netcheckPreflightFigure: FigureDescriptor = {
  name: 'netcheck-preflight',
  title: `what rankd run --preflight adds on ${HOSTS} namespace hosts`,
  peers: [],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const notes: string[] = [];
  const report = (rows: Row[], limits: string): FigureReport => ({ rows, notes, limits, peersUsed: [] });
  const notRun = (why: string) =>
    report(
      [
        { figure: LABELS.both, rankd: notMeasured(why), peer: { name: ARM.plain, side: notMeasured(why) }, goals: [] },
        { figure: LABELS.added, rankd: notMeasured(why), goals: [GOAL] },
      ],
      'The figure did not get as far as a job; see the table.',
    );
  const missing = await whyNoPreflight(ctx);
  if (missing) throw new Error(missing);
  const why = whyNoNamespaces() ?? (which('iperf3') ? null : '`iperf3` is not installed (Debian package iperf3)');
  if (why) return notRun(why);
  mkdirSync(ctx.tmpDir, { recursive: true });
  let cluster: NamespaceCluster | undefined;
  try {
    cluster = await startNamespaceCluster(ctx, { hosts: HOSTS, label: 'bench netcheck-preflight' });
    const c = cluster;
    const candidates: Candidate[] = [
      { name: ARM.preflight, sample: () => runJob(ctx, c, [...PREFLIGHT, ...JOB]) },
      { name: ARM.plain, sample: () => runJob(ctx, c, JOB) },
    ];
    const cmp = await compareArms(candidates, { rounds: ctx.rounds, unit: 's', log: ctx.log });
    const rows: Row[] = [comparisonRow(cmp, LABELS.both, ARM.preflight, { arm: ARM.plain, label: ARM.plain }, [])];
    const [withIt, without] = [ARM.preflight, ARM.plain].map((n) => cmp.result.arms.find((a) => a.name === n));
    if (withIt?.stat && without?.stat && withIt.samples.length === without.samples.length) {
      const added = summarize(withIt.samples.map((s, i) => s - without.samples[i]!));
      rows.push({ figure: LABELS.added, rankd: measured('s', added), goals: [GOAL] });
    } else {
      const failed = [withIt, without].find((a) => !a?.stat);
      rows.push({
        figure: LABELS.added,
        rankd: notMeasured(`${failed?.name ?? 'an arm'} failed: ${failed?.error ?? 'no samples'}`),
        goals: [GOAL],
      });
    }
    notes.push(...notesText());
    return report(rows, limitsText());
  } catch (err) {
    return notRun((err as Error).message);
  } finally {
    await cluster?.net.teardown();
  }
}

/** null when the built CLI's `rankd run` offers --preflight, else the message the figure fails with. */
async function whyNoPreflight(ctx: BenchContext): Promise<string | null> {
  const missing = await missingCommand(ctx.repoRoot, 'run');
  if (missing) return missing;
  const argv = rankdArgv(ctx.repoRoot, ['run', '--help']);
  let help: string;
  try {
    help = (await execFileAsync(argv[0]!, argv.slice(1), { timeout: 15_000 })).stdout;
  } catch (err) {
    return `\`rankd run --help\` failed: ${(err as Error).message.split('\n')[0]}`;
  }
  return /--preflight\b/.test(help)
    ? null
    : "`rankd run --preflight` does not exist in this build: the built CLI's `rankd run --help` offers no " +
        '--preflight flag (the preflight of issue 28 is not merged here), so there is nothing to time';
}

/** One job from the controller's namespace, which must exit 0; seconds from spawn to its drained output. */
async function runJob(ctx: BenchContext, c: NamespaceCluster, args: readonly string[]): Promise<number> {
  const argv = c.net.argvIn(c.net.controller, rankdArgv(ctx.repoRoot, ['run', ...args]));
  const run = await timeProcess(argv, { env: { ...process.env, ...c.clientEnv }, timeoutMs: RUN_TIMEOUT_MS });
  return run.ms / 1000;
}

function limitsText(): string {
  return (
    `Without the flag the job is the controller's plan and ${HOSTS} agents starting /bin/true; with it, the ` +
    `controller first runs one round of the circle schedule over the job's ${HOSTS} nodes (${HOSTS / 2} pairs at ` +
    'once, 1 s of iperf3 --bidir each, the agents starting server and client on offered ports) and analyses it. ' +
    "The difference is that round: its 1 s of traffic, two iperf3 start-ups and the agents' round trips. On this " +
    `2-core machine ${HOSTS / 2} concurrent probes are bound by the CPUs, which spreads their bandwidths: a pair far ` +
    'below the median is flagged, and since -N 8 on 8 hosts leaves no node to spare, the job then fails with the ' +
    'finding; such a round drops the arm with that message rather than counting a job that did not run.'
  );
}

function notesText(): string[] {
  return [
    `One \`rankd controller\` in its own network namespace and one \`rankd agent\` in each of ${HOSTS} more, on one ` +
      'bridge (10.77.<n>.0/24, guarded by an unreachable route in the root namespace); all on this machine.',
    `\`${ARM.preflight}\` and \`${ARM.plain}\` from the controller's namespace take turns round by round after one ` +
      'unmeasured warm-up each, each timed from spawn to the end of its output, and must exit 0. The second row is ' +
      'the difference within each round, then its median, min and max.',
  ];
}
