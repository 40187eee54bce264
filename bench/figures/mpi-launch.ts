// mpi-launch: starting a real MPI program, 2 ranks of mpi_hello (MPI_Init, rank and
// size, one line, MPI_Finalize), end to end. rankd serves the ranks its own PMI-1 server
// (on by default); MPICH's hydra serves the same binary through its proxy; Open MPI's
// mpirun serves the same source built against Open MPI through its daemon and PMIx.
// Every run must print size=2 from both ranks: a launcher whose ranks come up as
// singletons of size 1 exits 0 too, and would be measuring the wrong thing.
import path from 'node:path';
import type { BenchContext, FigureDescriptor, FigureReport, Goal } from '../lib/figure.js';
import { timeProcess } from '../lib/process-timing.js';
import { compareArms, comparisonRow, type Candidate } from '../lib/rows.js';
import { which } from '../lib/which.js';
import { HYDRA_LAUNCHER, hydraArgv, mpirunArgv, OPEN_MPI_LAUNCHER } from '../peers/mpi.js';
import { buildMpiHello, wrongHelloOutput, type Built } from '../peers/mpi-hello.js';
import { cliFloor, fleetForRun, rankdRunArgv, runCommandFloor } from '../rankd/run.js';

const RANKS = 2;
const ARM = {
  rankd: `rankd run -n ${RANKS} -- ./mpi_hello`,
  rankdQuiet: `rankd run -q -n ${RANKS} -- ./mpi_hello`,
  hydra: `mpiexec.hydra -n ${RANKS} ./mpi_hello`,
  openmpi: `mpirun.openmpi -np ${RANKS} ./mpi_hello_ompi`,
} as const;
const TIMEOUT_MS = 60_000;
const HYDRA_GOAL: Goal = { on: 'ratio', op: '<=', value: 1, text: '≤ 1× mpiexec.hydra' };
const OPEN_MPI_GOAL: Goal = { on: 'ratio', op: '<=', value: 1, text: '≤ 1× mpirun.openmpi' };

export const mpiLaunchFigure: FigureDescriptor = {
  name: 'mpi-launch',
  title: `launching ${RANKS} ranks of an MPI hello world`,
  peers: ['mpiexec.hydra', 'mpirun.openmpi', 'mpicc.openmpi'],
  run,
};

/** An arm that runs argv from the binaries' directory and refuses a run whose ranks did not see a world of RANKS. */
function helloArm(name: string, argv: readonly string[], cwd: string, env?: NodeJS.ProcessEnv): Candidate {
  return {
    name,
    sample: async () => {
      const r = await timeProcess(argv, { timeoutMs: TIMEOUT_MS, cwd, captureStdout: true, ...(env ? { env } : {}) });
      const wrong = wrongHelloOutput(r.stdout, RANKS);
      if (wrong) throw new Error(`wrong output: ${wrong}`);
      return r.ms;
    },
  };
}

function unavailable(name: string, built: Built, launcher: string, pkg: string): Candidate | null {
  if ('why' in built) return { name, unavailable: `mpi_hello could not be built: ${built.why}` };
  if (!which(launcher)) return { name, unavailable: `${launcher} is not installed (Debian package ${pkg})` };
  return null;
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const hello = await buildMpiHello(path.join(ctx.tmpDir, 'mpi-hello'));
  const rankd = await fleetForRun(ctx, 1, 'mpi-launch');
  try {
    const candidates: Candidate[] = [];
    if ('why' in hello.mpich) {
      const why = `mpi_hello could not be built: ${hello.mpich.why}`;
      candidates.push({ name: ARM.rankd, unavailable: why }, { name: ARM.rankdQuiet, unavailable: why });
    } else if ('why' in rankd) {
      candidates.push({ name: ARM.rankd, unavailable: rankd.why }, { name: ARM.rankdQuiet, unavailable: rankd.why });
    } else {
      const env = rankd.fleet.clientEnv;
      candidates.push(
        helloArm(ARM.rankd, rankdRunArgv(ctx, { ntasks: RANKS }, ['./mpi_hello'], { quiet: false }), hello.dir, env),
        helloArm(ARM.rankdQuiet, rankdRunArgv(ctx, { ntasks: RANKS }, ['./mpi_hello']), hello.dir, env),
      );
    }
    candidates.push(
      unavailable(ARM.hydra, hello.mpich, HYDRA_LAUNCHER, 'mpich') ??
        helloArm(ARM.hydra, hydraArgv(RANKS, ['./mpi_hello']), hello.dir),
      unavailable(ARM.openmpi, hello.openmpi, OPEN_MPI_LAUNCHER, 'openmpi-bin') ??
        helloArm(ARM.openmpi, mpirunArgv(RANKS, ['./mpi_hello_ompi']), hello.dir),
    );
    ctx.log('mpi-launch: interleaved');
    const c = await compareArms(candidates, { rounds: ctx.rounds, unit: 'ms', log: ctx.log });
    ctx.log('mpi-launch: the CLI alone (node -e 0, rankd version, rankd run --help)');
    const floor = await cliFloor(ctx);
    const runHelp = await runCommandFloor(ctx);
    const median = (arm: string) => c.result.arms.find((a) => a.name === arm)?.stat?.median;
    const label = `MPI launch, ${RANKS} ranks of mpi_hello`;
    const quietLabel = `${label}, \`rankd run -q\``;
    return {
      rows: [
        comparisonRow(c, label, ARM.rankd, { arm: ARM.hydra, label: ARM.hydra }, [HYDRA_GOAL]),
        comparisonRow(c, label, ARM.rankd, { arm: ARM.openmpi, label: ARM.openmpi }, [OPEN_MPI_GOAL]),
        comparisonRow(c, quietLabel, ARM.rankdQuiet, { arm: ARM.hydra, label: ARM.hydra }, [HYDRA_GOAL]),
        comparisonRow(c, quietLabel, ARM.rankdQuiet, { arm: ARM.openmpi, label: ARM.openmpi }, [OPEN_MPI_GOAL]),
      ],
      notes: [
        'mpi_hello is one C source built at the figure’s start: with `mpicc.mpich` (MPICH 4.0.2, ch4:ucx) for rankd and hydra, with `mpicc.openmpi` for Open MPI’s mpirun. Every run must print `size=2` from rank 0 and rank 1 exactly once, or its side is dropped as not measured.',
        `rankd runs against a controller and one agent started by this bench on 127.0.0.1; \`${ARM.rankd}\` is what a user types (the rank map is printed on stderr), \`-q\` leaves it out. The agent serves each rank PMI-1 on an inherited socket (PMI_FD); the job's fences go through the controller.`,
        `hydra runs as typed, \`${ARM.hydra}\`, on this host (its default): mpiexec starts a hydra_pmi_proxy that forks both ranks and serves their PMI on socketpairs.`,
        'mpirun.openmpi runs with `--allow-run-as-root --oversubscribe` and its transports held to `lo`, as in the launch figure.',
        'MPICH’s MPI_Init moves its main thread over every CPU and back (hwloc’s x86 topology discovery; seen here with strace: sched_setaffinity to CPU 0, to CPU 1, then the original set). A binding check that read /proc/<pid>/status inside that window saw a CPU the rank was not given and failed the job (“binding mismatch”, about once in 50 runs before the fix); the agent now counts a CPU mismatch only when it lasts 250 ms, and a run that still fails drops rankd’s side of the figure.',
        'All three are timed from spawn to the end of their output. Every connection the MPI libraries opened here went to 127.0.0.1 (checked once with strace; UCX binds listening sockets on the machine’s own address and never connects to them for 2 ranks on one host).',
      ],
      limits: limitsText(floor, runHelp, median(ARM.rankdQuiet), median(ARM.hydra), median(ARM.openmpi)),
      peersUsed: ['mpiexec.hydra', 'mpirun.openmpi'],
    };
  } finally {
    if ('fleet' in rankd) await rankd.fleet.stop();
  }
}

const ms = (x: number | undefined) => (x === undefined ? 'not measured' : `${x.toFixed(0)} ms`);

/** What bounds each side, with this run's own floors and medians in it. */
function limitsText(
  floor: { nodeMs: number; cliMs: number },
  runHelpMs: number,
  rankdQuiet?: number,
  hydra?: number,
  openmpi?: number,
): string {
  return [
    'The ranks’ own work is the same on every side: MPI_Init (transports, a shared-memory segment), one or two PMI barriers, MPI_Finalize.',
    'What differs is the launcher. hydra is C: mpiexec forks a proxy that forks the ranks and serves their PMI on socketpairs, one hop away.',
    'mpirun.openmpi starts its own runtime (ORTE logic in-process, a PMIx server, component loading) before any rank.',
    'rankd pays a Node CLI start, planning and a request to the controller, a job.start to the agent, the rank supervisor, which pins the rank',
    'in front of each rank, and every PMI barrier is a round trip agent → controller → agent (a star: one node here), then the exit reports back.',
    `Here \`node -e 0\` took ${ms(floor.nodeMs)}, \`rankd version\` ${ms(floor.cliMs)}, and \`rankd run --help\` ${ms(runHelpMs)} (medians):`,
    `loading the run command costs ${ms(runHelpMs - floor.cliMs)} over the CLI's floor.`,
    `Against hydra (${ms(hydra)}) and Open MPI (${ms(openmpi)}), \`rankd run -q\` took ${ms(rankdQuiet)}:`,
    'the CLI start, then the controller and agent path (over TLS), then the ranks’ MPI_Init and barriers.',
    'The default `rankd run` also prints the rank map, rendered from the map the controller returns (the CLI loads neither',
    'the planner nor the schema library for it).',
    'A Node client cannot start in less than a bare Node process, so ≤ 1× hydra needs the CLI’s own load near that floor and the',
    'controller path well under 100 ms.',
  ].join(' ');
}
