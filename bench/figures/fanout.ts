// fanout: a wide launch. rankd spreads 128 ranks over 32 agents × 4; the nearest peer on
// one machine is mpirun starting 128 ranks, oversubscribed on its 2 cores. rankd is told
// --oversubscribe too when an agent has fewer cores than 4: its ranks then share cores,
// each still pinned to one.
import os from 'node:os';
import { type BenchContext, type FigureDescriptor, type FigureReport, type Goal, type Row } from '../lib/figure.js';
import { timeProcess } from '../lib/process-timing.js';
import { compareArms, comparisonRow } from '../lib/rows.js';
import { which } from '../lib/which.js';
import { mpirunArgv, OPEN_MPI_LAUNCHER } from '../peers/mpi.js';
import { fleetForRun, rankdRunArgv } from '../rankd/run.js';

export const FANOUT_AGENTS = 32;
export const FANOUT_RANKS_PER_AGENT = 4;
const TIMEOUT_MS = 120_000;
const GOALS: Goal[] = [
  { on: 'ratio', op: '<=', value: 1, text: '≤ 1× mpirun' },
  { on: 'rankd', op: '<', value: 1000, text: '< 1 s' },
];

function label(perAgent: number): string {
  return `launch fan-out, ${FANOUT_AGENTS} agents × ${perAgent} ranks`;
}

export const fanoutFigure: FigureDescriptor = {
  name: 'fanout',
  title: `launch fan-out: ${FANOUT_AGENTS} agents × ${FANOUT_RANKS_PER_AGENT} ranks`,
  peers: ['mpirun.openmpi'],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const perAgent = FANOUT_RANKS_PER_AGENT;
  const RANKS = FANOUT_AGENTS * perAgent;
  const oversubscribe = perAgent > os.availableParallelism();
  const ARM = {
    rankd: `rankd run -N ${FANOUT_AGENTS} --ranks-per-node ${perAgent}${oversubscribe ? ' --oversubscribe' : ''} true`,
    mpirun: `${OPEN_MPI_LAUNCHER} -np ${RANKS} --oversubscribe true`,
  };
  const rankd = await fleetForRun(ctx, FANOUT_AGENTS, 'fanout');
  try {
    ctx.log(`fanout: interleaved, ${FANOUT_AGENTS} agents × ${perAgent} ranks`);
    const placement = { nodes: FANOUT_AGENTS, ranksPerNode: perAgent, oversubscribe };
    const c = await compareArms(
      [
        'fleet' in rankd
          ? {
              name: ARM.rankd,
              sample: async () =>
                (
                  await timeProcess(rankdRunArgv(ctx, placement, ['true']), {
                    timeoutMs: TIMEOUT_MS,
                    env: rankd.fleet.clientEnv,
                  })
                ).ms,
            }
          : { name: ARM.rankd, unavailable: rankd.why },
        which(OPEN_MPI_LAUNCHER)
          ? {
              name: ARM.mpirun,
              sample: async () => (await timeProcess(mpirunArgv(RANKS, ['true']), { timeoutMs: TIMEOUT_MS })).ms,
            }
          : { name: ARM.mpirun, unavailable: `${OPEN_MPI_LAUNCHER} is not installed (Debian package openmpi-bin)` },
      ],
      { rounds: ctx.rounds, unit: 'ms', log: ctx.log },
    );
    const rows: Row[] = [comparisonRow(c, label(perAgent), ARM.rankd, { arm: ARM.mpirun, label: ARM.mpirun }, GOALS)];
    return {
      rows,
      notes: [
        `All ${RANKS} ranks run on this one machine: rankd's ${FANOUT_AGENTS} agents are ${FANOUT_AGENTS} \`rankd agent\` processes here (one controller, ${FANOUT_AGENTS} WebSocket connections on 127.0.0.1), and mpirun starts its ${RANKS} ranks itself.`,
        'mpirun.openmpi runs with `--mca odls_base_cutoff 100000`: Open MPI 4.1.4’s threaded spawn (used above 32 local ranks) hangs here after all ranks of `true` have exited; the serial path completes.',
      ],
      limits: [
        `On 2 cores, ${RANKS} process starts are serialized by the CPU, so the figure is the fan-out's CPU time over 2 cores.`,
        `mpirun.openmpi spends ~0.55 s of CPU on one core (fork/exec of ${RANKS} ranks, collecting their exits). rankd spent ~1.2 s across`,
        `both besides the CLI (counted at load 1.7-2.2): the controller ~90 ms, ${FANOUT_AGENTS} agents ~620 ms`,
        '(~4.8 ms a rank: ~1 ms forking the supervisor from a ~55 MB Node process, which also blocks that agent until the',
        'exec; the rest the spool and cgroup, see below, and the rank messages), supervisors and ranks ~500 ms (~3.9 ms a rank:',
        "cgroup join and removal, spool files, the rank's own exec). Each rank creates 7 spool inodes (its directory,",
        "launch.json, supervisor.log, stdout, stderr, rank.json, exit.json), removed when the job is released. On this VM's",
        'journal-less ext4, every inode allocation skips each inode of its block group freed within the last 60 s',
        "(ext4 recently_deleted), so back-to-back rounds make the next round's allocations slower: 900 creates cost 0.1 s of CPU",
        'on a quiet group and 0.7 s after 7 create/delete rounds (6 ms on tmpfs); in a perf profile of the agents during a',
        'fan-out, ext4 inode allocation was 40% of their CPU, and the same fan-out with its spool on tmpfs used 0.3-0.5 s',
        "less CPU. Nothing waits on a timer between the last rank's exit and the CLI's exit (setImmediate hops only).",
        `On real hardware each agent has a node of its own and starts its ${perAgent} ranks in parallel there.`,
      ].join(' '),
      peersUsed: ['mpirun.openmpi'],
    };
  } finally {
    if ('fleet' in rankd) await rankd.fleet.stop();
  }
}
