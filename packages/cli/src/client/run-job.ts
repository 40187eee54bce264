// Submits a job and stays with it to the end: the rank map on stderr, labelled output
// streamed live, Ctrl-C to cancel (twice to detach). A job that restarts (--max-restarts)
// is followed into its next attempts: why the last one failed, the new rank map, its output.
// Returns the exit code to use: the job's, that of its last attempt.
import type { JobSubmit, JobView } from '@rankd/protocol';
import type { ClientConfig } from './config.js';
import { attemptLabel, restartLine } from './attempt-lines.js';
import { followLogs } from './follow-logs.js';
import { call } from './rest.js';
import { forwardStdin } from './stdin-forward.js';
import { renderRankMapTable } from '@rankd/protocol/rank-map-table';
import { cpuHoldLine } from '@rankd/protocol/cpu-hold';
import { DEFAULT_JOB_GRACE_SECONDS } from '@rankd/protocol/limits';
import { CLOSED_STDOUT_STATUS, onStdoutClosed } from '../closed-stdout.js';

/** How long a job cancelled because our stdout closed may take to end, beyond its grace. */
const CLOSED_STDOUT_WAIT_MS = 10_000;
import { describeNodeWarning, type NodeWarning } from '@rankd/protocol/rank-warnings';

export interface RunJobOptions {
  quiet: boolean;
  /** Line label template, '' for raw output. */
  label: string;
}

export async function runJob(config: ClientConfig, submit: JobSubmit, options: RunJobOptions): Promise<number> {
  const job = await call(config, 'POST /v1/jobs', { body: submit });
  // the rank map is printed once: now if the job was planned at once, else when it starts
  const showHeader = (view: JobView) => {
    if (options.quiet || !view.rankMap) return;
    const hold = cpuHoldLine(view.rankMap);
    process.stderr.write(
      `rankd: job ${view.id}\n${renderRankMapTable(view.rankMap)}${hold ? `rankd: job ${view.id} ${hold}\n` : ''}`,
    );
  };
  showHeader(job);
  // opened at once, queued or not: the bytes wait at the controller, within their window;
  // the job's end, a detach or an error stops it (finally below), and the ranks read EOF
  const input = submit.stdin === undefined ? null : await forwardStdin(config, job.id);
  // the header's last lines: they come as each node's ranks start
  const onWarning = (w: NodeWarning) => {
    if (!options.quiet) process.stderr.write(`rankd: warning: ${describeNodeWarning(w)}\n`);
  };
  // like srun's "job N queued and waiting for resources": always said, -q or not
  const onQueued = (reason: string) => process.stderr.write(`rankd: job ${job.id} queued: ${reason}\n`);
  if (job.state === 'queued') onQueued(job.reason);
  let lastReason = job.reason;

  let interrupts = 0;
  const detach = new AbortController();
  const cancel = () =>
    call(config, 'POST /v1/jobs/:id/cancel', { params: { id: job.id } }).catch((err: Error) =>
      process.stderr.write(`rankd: cancel failed: ${err.message}\n`),
    );
  const onInterrupt = () => {
    interrupts++;
    if (interrupts === 1) {
      process.stderr.write(
        `\nrankd: cancelling job ${job.id}; waiting for its ranks to end (Ctrl-C again to detach)\n`,
      );
      void cancel();
    } else {
      detach.abort();
    }
  };
  process.on('SIGINT', onInterrupt);
  process.on('SIGTERM', onInterrupt);
  // `rankd run … | head -1`: nobody reads the output any more, so the job is cancelled as
  // Ctrl-C cancels it, and its ranks are waited for, for a bounded time
  let stdoutClosed = false;
  const unwatchStdout = onStdoutClosed(() => {
    stdoutClosed = true;
    void cancel();
    setTimeout(
      () => detach.abort(),
      (submit.grace ?? DEFAULT_JOB_GRACE_SECONDS) * 1000 + CLOSED_STDOUT_WAIT_MS,
    ).unref();
  });
  try {
    const end = await followLogs(config, job, {
      label: options.label,
      signal: detach.signal,
      onQueued: (reason) => {
        if (reason !== lastReason) onQueued((lastReason = reason));
      },
      onStarted: async () => {
        const view = await call(config, 'GET /v1/jobs/:id', { params: { id: job.id } });
        const which = view.attempt > 0 ? ` ${attemptLabel(view.attempt, view.maxRestarts)}` : '';
        process.stderr.write(`rankd: job ${job.id}${which} started\n`);
        showHeader(view);
        return view;
      },
      // said with -q too: like the reason a job failed, never hidden
      onRestart: (restart) => process.stderr.write(`rankd: ${restartLine(restart)}\n`),
      onWarning,
    });
    if (!end) {
      process.stderr.write(`rankd: detached from job ${job.id}; it may still be ending ("rankd job ${job.id}")\n`);
      return stdoutClosed ? CLOSED_STDOUT_STATUS : 130;
    }
    if (stdoutClosed) return CLOSED_STDOUT_STATUS;
    // -q hides the header, never the reason a job failed
    if (end.state !== 'succeeded') process.stderr.write(`rankd: job ${job.id} ${end.state}: ${end.reason}\n`);
    return end.exitCode ?? 1;
  } finally {
    input?.stop();
    process.off('SIGINT', onInterrupt);
    process.off('SIGTERM', onInterrupt);
    unwatchStdout();
  }
}
