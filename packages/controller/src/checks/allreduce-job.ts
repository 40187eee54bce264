// The job `rankd check allreduce` runs: rankd's own launcher (packages/agent/checks/,
// copied into the agent's dist/checks/ by the build and by deploy/install.sh) on every
// rank, wired up by the agents' PMI-1 server and placed like any job. Its argv is built
// here from a fixed path of this installation and numbers: nothing of it is a string a
// caller sent. The nodes are expected to have rankd installed where the controller has it
// (deploy/install.sh's /opt/rankd on both).
import { fileURLToPath } from 'node:url';
import {
  ALLREDUCE_BYTES,
  ALLREDUCE_ITERATIONS,
  ALLREDUCE_TIMEOUT_S,
  CheckErrorCode,
  RankdError,
  type AllreduceCheckRequest,
  type JobSubmit,
} from '@rankd/protocol';

/** The launcher on the nodes: from src/checks/ and dist/checks/ alike, the agent's dist/checks/. */
export const ALLREDUCE_LAUNCHER = fileURLToPath(
  new URL('../../../agent/dist/checks/allreduce-check.sh', import.meta.url),
);
/** A POSIX shell runs the launcher: it needs no execute bit, whatever copied it. */
const SHELL = '/bin/sh';
export const ALLREDUCE_JOB_NAME = 'rankd-check-allreduce';

/** Seconds of the default timeout: the build and the wire-up, then each size's share. */
const BASE_TIMEOUT_S = 60;
const PER_SIZE_TIMEOUT_S = 20;

export interface SweepSizes {
  minBytes: number;
  maxBytes: number;
  iterations: number;
}

/** The request's sizes with their defaults; --min-bytes above --max-bytes is refused. */
export function sweepSizes(req: AllreduceCheckRequest): SweepSizes {
  const minBytes = req.minBytes ?? ALLREDUCE_BYTES.defaultMin;
  const maxBytes = req.maxBytes ?? Math.max(ALLREDUCE_BYTES.defaultMax, minBytes);
  if (minBytes > maxBytes)
    throw new RankdError(
      CheckErrorCode.SizesInvalid,
      `--min-bytes ${minBytes} is above --max-bytes ${maxBytes}: the sweep doubles from the one to the other`,
    );
  return { minBytes, maxBytes, iterations: req.iterations ?? ALLREDUCE_ITERATIONS.default };
}

/** How many sizes the sweep measures: minBytes, doubled while it stays within maxBytes. */
export function sizeCount({ minBytes, maxBytes }: SweepSizes): number {
  let n = 0;
  for (let b = minBytes; b <= maxBytes; b *= 2) n++;
  return n;
}

/** The sweep's job, submitted as the caller would submit it, as its Unix user. */
export function allreduceJob(req: AllreduceCheckRequest, sizes: SweepSizes, user: string | undefined): JobSubmit {
  const timeout = Math.min(
    req.timeout ?? BASE_TIMEOUT_S + PER_SIZE_TIMEOUT_S * sizeCount(sizes),
    ALLREDUCE_TIMEOUT_S.max,
  );
  return {
    command: [
      SHELL,
      ALLREDUCE_LAUNCHER,
      '--min-bytes',
      String(sizes.minBytes),
      '--max-bytes',
      String(sizes.maxBytes),
      '--iterations',
      String(sizes.iterations),
    ],
    name: ALLREDUCE_JOB_NAME,
    placement: req.placement,
    mpi: 'pmi1',
    timeout,
    // a check runs now or not at all: it must not hold an HTTP request while it queues
    immediate: true,
    ...(user === undefined ? {} : { user }),
  };
}
