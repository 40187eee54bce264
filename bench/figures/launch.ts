// launch: the cost of starting a tiny job, 2 ranks of `true`, end to end — what a user
// waits for between pressing Enter and getting the prompt back. rankd's side is what a
// user types, `rankd run -n 2 -- true`, which prints the rank map on stderr; `-q`, which
// leaves it out, is a second line.
import path from 'node:path';
import type { BenchContext, FigureDescriptor, FigureReport, Goal } from '../lib/figure.js';
import { timeProcess } from '../lib/process-timing.js';
import { ratioOf } from '../lib/interleave.js';
import { compareArms, comparisonRow, type Candidate } from '../lib/rows.js';
import { which } from '../lib/which.js';
import { mpirunArgv, OPEN_MPI_LAUNCHER } from '../peers/mpi.js';
import { slurmForFigure } from '../peers/slurm-arm.js';
import { ensureCliBundle } from '../rankd/cli-bundle.js';
import { profileCli, type CliProfile } from '../rankd/cli-profile.js';
import { cliFloor, fleetForRun, rankdRunArgv, runCommandFloor } from '../rankd/run.js';

const ARM = {
  rankd: 'rankd run -n 2 -- true',
  rankdQuiet: 'rankd run -q -n 2 -- true',
  srun: 'srun -n 2 true',
  rankdStdin: 'rankd run -n 2 -- true, stdin open',
  srunStdin: 'srun -n 2 true, stdin open',
  mpirun: `${OPEN_MPI_LAUNCHER} -np 2 true`,
} as const;
const TIMEOUT_MS = 60_000;
const LABEL = 'launch, 2 ranks of `true`';
const QUIET_LABEL = `${LABEL}, \`rankd run -q\``;
const STDIN_LABEL = `${LABEL}, stdin an open pipe (a prompt nobody types into)`;
const MPIRUN_GOAL: Goal = { on: 'ratio', op: '<=', value: 1, text: '≤ 1× mpirun' };
const SRUN_GOAL: Goal = { on: 'ratio', op: '<=', value: 0.5, text: '≤ 0.5× srun' };

export const launchFigure: FigureDescriptor = {
  name: 'launch',
  title: 'launching 2 ranks of `true`',
  peers: ['srun', 'mpirun.openmpi'],
  run,
};

/**
 * The environment every side runs in. NODE_EXTRA_CA_CERTS makes each Node start parse a CA
 * bundle (~80 ms here, shared/docs/recipes.md); rankd reads its controller's CA from
 * RANKD_CA and needs none of it. Unset for every side alike, whatever the shell had.
 */
function benchEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env = { ...base };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/** A `rankd run` arm; the default one must have printed the rank map, or it measured something else. */
function rankdArm(
  name: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
  header: boolean,
  stdin: 'ignore' | 'open' = 'ignore',
): Candidate {
  return {
    name,
    sample: async () => {
      const r = await timeProcess(argv, { timeoutMs: TIMEOUT_MS, env, stdin });
      if (header !== /Node name/.test(r.stderrTail))
        throw new Error(`the rank map was ${header ? 'not ' : ''}printed: ${r.stderrTail.slice(-200)}`);
      return r.ms;
    },
  };
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const bundleNote = ensureCliBundle(ctx.repoRoot);
  const slurm = await slurmForFigure(ctx, 'launch');
  const rankd = await fleetForRun(ctx, 1, 'launch');
  try {
    const rankdEnv = 'fleet' in rankd ? benchEnv(rankd.fleet.clientEnv) : {};
    const defaultArgv = rankdRunArgv(ctx, { ntasks: 2 }, ['true'], { quiet: false });
    const candidates: Candidate[] = [
      'fleet' in rankd ? rankdArm(ARM.rankd, defaultArgv, rankdEnv, true) : { name: ARM.rankd, unavailable: rankd.why },
      'fleet' in rankd
        ? rankdArm(ARM.rankdQuiet, rankdRunArgv(ctx, { ntasks: 2 }, ['true']), rankdEnv, false)
        : { name: ARM.rankdQuiet, unavailable: rankd.why },
      'slurm' in slurm
        ? {
            name: ARM.srun,
            sample: async () =>
              (
                await timeProcess(slurm.slurm.srun(2, ['true']), {
                  timeoutMs: TIMEOUT_MS,
                  env: benchEnv(slurm.slurm.env),
                })
              ).ms,
          }
        : { name: ARM.srun, unavailable: slurm.why },
      // at a prompt stdin is a terminal: rankd then opens the job's stdin stream to rank 0, srun forwards to its tasks
      'fleet' in rankd
        ? rankdArm(ARM.rankdStdin, defaultArgv, rankdEnv, true, 'open')
        : { name: ARM.rankdStdin, unavailable: rankd.why },
      'slurm' in slurm
        ? {
            name: ARM.srunStdin,
            sample: async () =>
              (
                await timeProcess(slurm.slurm.srun(2, ['true']), {
                  timeoutMs: TIMEOUT_MS,
                  env: benchEnv(slurm.slurm.env),
                  stdin: 'open',
                })
              ).ms,
          }
        : { name: ARM.srunStdin, unavailable: slurm.why },
      which(OPEN_MPI_LAUNCHER)
        ? {
            name: ARM.mpirun,
            sample: async () =>
              (await timeProcess(mpirunArgv(2, ['true']), { timeoutMs: TIMEOUT_MS, env: benchEnv() })).ms,
          }
        : { name: ARM.mpirun, unavailable: `${OPEN_MPI_LAUNCHER} is not installed (Debian package openmpi-bin)` },
    ];
    ctx.log('launch: interleaved');
    const c = await compareArms(candidates, { rounds: ctx.rounds, unit: 'ms', log: ctx.log });
    ctx.log('launch: the CLI alone (node -e 0, rankd version, rankd run --help)');
    const floor = await cliFloor(ctx);
    const runHelp = await runCommandFloor(ctx);
    ctx.log(`launch: a CPU profile of ${ARM.rankd}`);
    const profile =
      'fleet' in rankd ? await profileCli(defaultArgv, rankdEnv, path.join(ctx.tmpDir, 'launch-profile')) : null;
    const median = (arm: string) => c.result.arms.find((a) => a.name === arm)?.stat?.median;
    // paired round by round, as the rows' ratios are: what printing the map adds
    const headerRatio = ratioOf(c.result, ARM.rankd, ARM.rankdQuiet)?.median;
    return {
      rows: [
        comparisonRow(c, LABEL, ARM.rankd, { arm: ARM.mpirun, label: ARM.mpirun }, [MPIRUN_GOAL]),
        comparisonRow(c, LABEL, ARM.rankd, { arm: ARM.srun, label: ARM.srun }, [SRUN_GOAL]),
        comparisonRow(c, QUIET_LABEL, ARM.rankdQuiet, { arm: ARM.mpirun, label: ARM.mpirun }, [MPIRUN_GOAL]),
        comparisonRow(c, STDIN_LABEL, ARM.rankdStdin, { arm: ARM.srunStdin, label: ARM.srunStdin }, [SRUN_GOAL]),
      ],
      notes: [
        `rankd runs against a controller and one agent started by this bench on 127.0.0.1, over TLS. \`${ARM.rankd}\` is what a user types: it submits, prints the rank map on stderr (a run that did not print it is dropped), streams the ranks' output, and exits with their code, like srun; \`-q\` leaves the map out.`,
        bundleNote,
        'Every side runs without NODE_EXTRA_CA_CERTS (shared/docs/recipes.md: it adds ~80 ms to every Node start here); rankd verifies its controller against RANKD_CA.',
        'srun runs against a Slurm started by this bench on loopback (slurmctld + slurmd -N localhost, auth/none, state in a temp dir), with `--immediate=1`; its time includes the round trips to slurmctld for the allocation and to slurmd for the step.',
        'mpirun.openmpi runs with `--allow-run-as-root --oversubscribe` and its transports held to `lo`.',
        "The other rows run every launcher with stdin on /dev/null, where rankd opens no stdin stream. The stdin row gives `rankd run` and srun a pipe that stays open and silent until they exit, as a terminal nobody types into: rankd then opens the job's stdin WebSocket to the controller (rank 0 reads it), and srun forwards stdin to its tasks.",
        `The CPU profile is \`node --cpu-prof\` of \`${ARM.rankd}\` (5 runs, the one of median length; sampled every 0.2 ms), by the script each sample was in.`,
      ],
      limits: limitsText(
        floor,
        runHelp,
        profile,
        headerRatio,
        median(ARM.rankd),
        median(ARM.rankdQuiet),
        median(ARM.mpirun),
      ),
      peersUsed: ['srun', 'mpirun.openmpi'],
    };
  } finally {
    if ('slurm' in slurm) await slurm.slurm.stop();
    if ('fleet' in rankd) await rankd.fleet.stop();
  }
}

const ms = (x: number | undefined) => (x === undefined ? 'not measured' : `${x.toFixed(0)} ms`);

/** What bounds each side, with this run's own floors, medians and profile in it. */
function limitsText(
  floor: { nodeMs: number; cliMs: number },
  runHelpMs: number,
  profile: CliProfile | null,
  headerRatio?: number,
  rankd?: number,
  quiet?: number,
  mpirun?: number,
): string {
  const busyMs = profile ? profile.busy.reduce((sum, b) => sum + b.ms, 0) : 0;
  const kinds = profile
    ? profile.busy
        .filter((b) => b.ms >= 1)
        .map((b) => `${b.kind} ${b.ms.toFixed(0)} ms`)
        .join(', ')
    : '';
  return [
    'Nothing here is compute: `true` exits at once, so each figure is the launcher’s own path.',
    'mpirun.openmpi (C) forks its local daemon logic, maps and wires up the ranks and waits for their exit reports;',
    'srun asks slurmctld for an allocation, then slurmd starts a slurmstepd that forks the tasks, with several RPCs between.',
    'rankd pays a Node CLI start, a TLS connection and a request to the controller (which plans the rank map), a message to the agent,',
    'the native rank launcher in front of each rank (it pins the rank itself, ~1.5 ms of CPU), and the exit reports back over the same path.',
    `Here \`node -e 0\` took ${ms(floor.nodeMs)}, \`rankd version\` ${ms(floor.cliMs)} and \`rankd run --help\` ${ms(runHelpMs)} (medians),`,
    `against ${ms(mpirun)} for all of \`${ARM.mpirun}\`; \`${ARM.rankd}\` took ${ms(rankd)} and \`-q\` ${ms(quiet)}`,
    `(default ÷ \`-q\`, round by round: ${headerRatio === undefined ? 'not measured' : `${headerRatio.toFixed(2)}×`}): the rank map is rendered from the map the controller returns,`,
    'and the CLI loads neither the planner nor the schema library for it.',
    'The CLI runs from its bundle (a few files: the entry, commander, the run command and its client) rather than ~100 compiled modules,',
    'and checks the controller’s certificate against RANKD_CA itself, so Node 20 never builds its store of ~140 bundled root certificates.',
    profile
      ? `In a CPU profile of \`${ARM.rankd}\` (${ms(profile.profiledMs)} from the profiler's start, after Node's own bootstrap), the CLI was busy ${ms(busyMs)} (${kinds})` +
        ` and idle ${ms(profile.idleMs)}, waiting for the controller, the agent and the ranks.`
      : '',
    outOfReach(floor.nodeMs, profile, mpirun),
  ]
    .filter((s) => s !== '')
    .join(' ');
}

/** Whether a bare Node start plus the wait for the controller, agent and ranks already exceeds mpirun. */
function outOfReach(nodeMs: number, profile: CliProfile | null, mpirun?: number): string {
  if (!profile || mpirun === undefined) return 'A Node client starts no faster than a bare Node process.';
  const floor = nodeMs + profile.idleMs;
  const verdict =
    floor > mpirun
      ? `more than all of mpirun (${ms(mpirun)}): ≤ 1× mpirun is out of reach for a Node client on this machine`
      : `under mpirun's ${ms(mpirun)}, leaving ${ms(mpirun - floor)} for the CLI's own work`;
  return (
    `A bare Node start and that wait alone come to ${ms(floor)}, ${verdict}. ` +
    'What is left of the CLI’s own time is in the profile above: Node’s ESM loader compiling the bundle’s files, the TLS handshake, the HTTP client and its streams.'
  );
}
