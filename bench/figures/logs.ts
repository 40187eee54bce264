// logs: throughput of rank output to one reader. Two ranks each print 500,000 lines; the
// bench reads the launcher's stdout through a pipe and counts newlines, so a launcher
// that drops or truncates lines fails instead of looking fast.
import type { BenchContext, FigureDescriptor, FigureReport } from '../lib/figure.js';
import { timeProcess } from '../lib/process-timing.js';
import { compareArms, comparisonRow, type Candidate } from '../lib/rows.js';
import { which } from '../lib/which.js';
import { mpirunArgv, OPEN_MPI_LAUNCHER } from '../peers/mpi.js';
import { slurmForFigure } from '../peers/slurm-arm.js';
import { fleetForRun, rankdRunArgv } from '../rankd/run.js';

export const LOG_RANKS = 2;
export const LOG_LINES_PER_RANK = 500_000;
/** A typical log line: about 100 bytes with the newline. */
export const LOG_LINE =
  'step 000123 loss=2.3456 lr=3.0e-04 tokens/s=123456.7 rank-local message for throughput testing';
/** The same printer for every launcher: yes | head is near-free, so the launcher is what is measured. */
const PRINTER_SCRIPT = `yes '${LOG_LINE}' | head -n ${LOG_LINES_PER_RANK}`;
export const PRINTER = ['sh', '-c', PRINTER_SCRIPT];

const ARM = {
  rankd: `rankd run -N 1 --ranks-per-node ${LOG_RANKS} --no-label`,
  mpirun: `${OPEN_MPI_LAUNCHER} -np ${LOG_RANKS}`,
  srun: `srun -n ${LOG_RANKS}`,
  direct: 'two printers straight into the pipe',
} as const;
const TIMEOUT_MS = 180_000;
const TOTAL = LOG_RANKS * LOG_LINES_PER_RANK;

export const logsFigure: FigureDescriptor = {
  name: 'logs',
  title: `log throughput, ${LOG_RANKS} ranks × ${LOG_LINES_PER_RANK.toLocaleString('en-US')} lines`,
  peers: ['mpirun.openmpi', 'srun'],
  run,
};

function linesPerSecond(argv: string[], env?: NodeJS.ProcessEnv) {
  return async () => {
    const r = await timeProcess(argv, { timeoutMs: TIMEOUT_MS, ...(env ? { env } : {}) });
    if (r.stdoutLines !== TOTAL) throw new Error(`${argv[0]} delivered ${r.stdoutLines} of ${TOTAL} lines`);
    return TOTAL / (r.ms / 1000);
  };
}

async function run(ctx: BenchContext): Promise<FigureReport> {
  const slurm = await slurmForFigure(ctx, 'logs');
  const rankd = await fleetForRun(ctx, 1, 'logs');
  try {
    const direct = ['sh', '-c', `(${PRINTER_SCRIPT}) & (${PRINTER_SCRIPT}) & wait`];
    const candidates: Candidate[] = [
      'fleet' in rankd
        ? {
            name: ARM.rankd,
            sample: linesPerSecond(
              rankdRunArgv(ctx, { nodes: 1, ranksPerNode: LOG_RANKS }, PRINTER, { label: false }),
              rankd.fleet.clientEnv,
            ),
          }
        : { name: ARM.rankd, unavailable: rankd.why },
      which(OPEN_MPI_LAUNCHER)
        ? { name: ARM.mpirun, sample: linesPerSecond(mpirunArgv(LOG_RANKS, PRINTER)) }
        : { name: ARM.mpirun, unavailable: `${OPEN_MPI_LAUNCHER} is not installed (Debian package openmpi-bin)` },
      'slurm' in slurm
        ? { name: ARM.srun, sample: linesPerSecond(slurm.slurm.srun(LOG_RANKS, PRINTER), slurm.slurm.env) }
        : { name: ARM.srun, unavailable: slurm.why },
      { name: ARM.direct, sample: linesPerSecond(direct) },
    ];
    ctx.log('logs: interleaved');
    const c = await compareArms(candidates, {
      rounds: ctx.rounds,
      unit: 'lines/s',
      higherIsBetter: true,
      log: ctx.log,
    });
    const directStat = c.result.arms.find((a) => a.name === ARM.direct)?.stat;
    const label = `log throughput, ${LOG_RANKS} ranks × ${LOG_LINES_PER_RANK.toLocaleString('en-US')} lines`;
    return {
      rows: [
        comparisonRow(c, label, ARM.rankd, { arm: ARM.mpirun, label: ARM.mpirun }, [
          { on: 'ratio', op: '>=', value: 1, text: '≥ 1× mpirun' },
        ]),
        comparisonRow(c, label, ARM.rankd, { arm: ARM.srun, label: ARM.srun }, []),
      ],
      notes: [
        '`rankd run` plays the follower here: it streams the job’s output from the controller as it arrives, like srun, against a controller and one agent on 127.0.0.1.',
        `Each rank runs \`sh -c "${PRINTER_SCRIPT}"\` (${LOG_LINE.length + 1}-byte lines); throughput is ${TOTAL.toLocaleString('en-US')} lines over the time from spawn to the last byte read, and a run that delivers fewer lines fails.`,
        directStat
          ? `Ceiling without any launcher (both printers writing straight into the bench's pipe): ${Math.round(directStat.median).toLocaleString('en-US')} lines/s median.`
          : 'The no-launcher ceiling could not be measured.',
      ],
      limits: [
        'The printers cost almost nothing, so each figure is the launcher’s forwarding path: read from the rank’s pipe,',
        'relay (mpirun through its I/O forwarding, srun through slurmstepd and a TCP stream to srun), write to the reader.',
        'On 2 cores the printers, the relay and the reader compete for CPU, which caps every figure well below the',
        'no-launcher ceiling. rankd’s path is longer: the agent reads each rank’s output from its spool file, sends it with',
        'its stream offset in binary WebSocket frames to the controller, which stores it and streams it (`format=frames`) to',
        '`rankd run`, which prints it: three Node processes touch every byte, but none decodes or re-encodes it.',
      ].join(' '),
      peersUsed: ['mpirun.openmpi', 'srun'],
    };
  } finally {
    if ('slurm' in slurm) await slurm.slurm.stop();
    if ('fleet' in rankd) await rankd.fleet.stop();
  }
}
