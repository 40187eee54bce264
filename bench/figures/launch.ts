// launch: the cost of starting a tiny job, 2 ranks of `true`, end to end — what a user
// waits for between pressing Enter and getting the prompt back.
import type { BenchContext, FigureDescriptor, FigureReport } from '../lib/figure.js';
import { timeProcess } from '../lib/process-timing.js';
import { compareArms, comparisonRow, type Candidate } from '../lib/rows.js';
import { which } from '../lib/which.js';
import { mpirunArgv, OPEN_MPI_LAUNCHER } from '../peers/mpi.js';
import { slurmForFigure } from '../peers/slurm-arm.js';
import { cliFloor, fleetForRun, rankdRunArgv } from '../rankd/run.js';

const ARM = { rankd: 'rankd run -N 1 --ranks-per-node 2 true', srun: 'srun -n 2 true', mpirun: `${OPEN_MPI_LAUNCHER} -np 2 true` } as const;
const TIMEOUT_MS = 60_000;

export const launchFigure: FigureDescriptor = {
  name: 'launch',
  title: 'launching 2 ranks of `true`',
  peers: ['srun', 'mpirun'],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const slurm = await slurmForFigure(ctx, 'launch');
  const rankd = await fleetForRun(ctx, 1, 'launch');
  try {
    const candidates: Candidate[] = [
      'fleet' in rankd
        ? { name: ARM.rankd, sample: async () => (await timeProcess(rankdRunArgv(ctx, { nodes: 1, ranksPerNode: 2 }, ['true']), { timeoutMs: TIMEOUT_MS, env: rankd.fleet.clientEnv })).ms }
        : { name: ARM.rankd, unavailable: rankd.why },
      'slurm' in slurm
        ? { name: ARM.srun, sample: async () => (await timeProcess(slurm.slurm.srun(2, ['true']), { timeoutMs: TIMEOUT_MS, env: slurm.slurm.env })).ms }
        : { name: ARM.srun, unavailable: slurm.why },
      which(OPEN_MPI_LAUNCHER)
        ? { name: ARM.mpirun, sample: async () => (await timeProcess(mpirunArgv(2, ['true']), { timeoutMs: TIMEOUT_MS })).ms }
        : { name: ARM.mpirun, unavailable: `${OPEN_MPI_LAUNCHER} is not installed (Debian package openmpi-bin)` },
    ];
    ctx.log('launch: interleaved');
    const c = await compareArms(candidates, { rounds: ctx.rounds, unit: 'ms', log: ctx.log });
    ctx.log('launch: the CLI alone (node -e 0, rankd version)');
    const { nodeMs: nodeStart, cliMs: cliStart } = await cliFloor(ctx);
    return {
      rows: [
        comparisonRow(c, 'launch, 2 ranks of `true`', ARM.rankd, { arm: ARM.srun, label: ARM.srun }, [{ on: 'ratio', op: '<=', value: 0.5, text: '≤ 0.5× srun' }]),
        comparisonRow(c, 'launch, 2 ranks of `true`', ARM.rankd, { arm: ARM.mpirun, label: ARM.mpirun }, [{ on: 'ratio', op: '<=', value: 1, text: '≤ 1× mpirun' }]),
      ],
      notes: [
        'rankd runs against a controller and one agent started by this bench on 127.0.0.1; `rankd run -q` plans, submits, waits for both ranks to exit and returns their code, like srun.',
        'srun runs against a Slurm started by this bench on loopback (slurmctld + slurmd -N localhost, auth/none, state in a temp dir), with `--immediate=1`; its time includes the round trips to slurmctld for the allocation and to slurmd for the step.',
        'mpirun runs with `--allow-run-as-root --oversubscribe` and its transports held to `lo`.',
      ],
      limits: [
        'Nothing here is compute: `true` exits at once, so each figure is the launcher’s own path.',
        'mpirun forks its local daemon logic, maps and wires up the ranks and waits for their exit reports;',
        'srun asks slurmctld for an allocation, then slurmd starts a slurmstepd that forks the tasks, with several RPCs between.',
        'rankd pays a CLI start (Node and its modules), planning and a request to the controller, a message to the agent,',
        'a supervisor (perl, ~5 ms) and numactl (~4 ms) in front of each rank, and the exit reports back over the same path.',
        `Here \`node -e 0\` alone took ${nodeStart.toFixed(0)} ms and \`rankd version\` ${cliStart.toFixed(0)} ms (medians):`,
        'a TypeScript CLI on Node starts no faster than that, and the controller and agent add some 30 ms of their own,',
        'so ≤ 1× mpirun and ≤ 0.5× srun are out of reach for a Node client on this machine; what is left to win is in the CLI’s',
        'first request (Node loads its HTTP client on first use) and in the supervisor chain.',
      ].join(' '),
      peersUsed: ['srun', 'mpirun'],
    };
  } finally {
    if ('slurm' in slurm) await slurm.slurm.stop();
    if ('fleet' in rankd) await rankd.fleet.stop();
  }
}
