// A job whose one rank writes a steady 10,000 lines/s: bursts of 100 lines every 10 ms,
// paced against the clock (a late burst is caught up, not skipped, so the rate holds on a
// busy machine), until it is cancelled or its own time limit ends it. Submitted over the
// REST API to one named node and cancelled by id; the cancel is also registered for
// teardown so an interrupted figure leaves no printer behind.
import { waitFor } from '../lib/child.js';
import { onTeardown } from '../lib/teardown.js';
import { api, jobState } from './api.js';
import type { Fleet } from './fleet.js';

export const FLOOD_LINES_PER_SECOND = 10_000;
const BURST = 100;
const PERIOD_S = BURST / FLOOD_LINES_PER_SECOND;
/** A typical log line, 96 bytes with its newline; the sequence number makes each one distinct. */
const LINE = "'step %09d loss=2.3456 lr=3.0e-04 tokens/s=123456.7 rank-local message for the log view\\n'";

/** Debian's python3: the pyenv shim on PATH is a shell script that would add its own start-up. */
const PYTHON = '/usr/bin/python3';

function printerScript(seconds: number): string {
  return [
    'import sys, time',
    `burst, period, limit = ${BURST}, ${PERIOD_S}, ${seconds}`,
    'start = time.monotonic(); sent = 0; n = 0',
    'while True:',
    '    elapsed = time.monotonic() - start',
    '    if elapsed >= limit: break',
    // every burst due by now, so the average rate is the nominal one even after a stall
    '    due = int(elapsed / period) + 1',
    '    while sent < due:',
    `        sys.stdout.write(''.join(${LINE} % (n + i) for i in range(burst)))`,
    '        n += burst; sent += 1',
    '    sys.stdout.flush()',
    '    time.sleep(max(0.0, start + sent * period - time.monotonic()))',
  ].join('\n');
}

export interface FloodJob {
  id: string;
  /** Cancels the job and waits (bounded) until it has ended; safe to call twice. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 30_000;
const END_TIMEOUT_MS = 30_000;
/** The job states a job never leaves (TERMINAL_JOB_STATES in @rankd/protocol), and 'gone' for one no longer listed. */
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed-out', 'lost', 'gone']);

/** Submits the printer on `node`, limited to `seconds`, and waits until its rank runs. */
export async function startFloodJob(fleet: Fleet, node: string, seconds: number): Promise<FloodJob> {
  const job = await api<{ id: string }>(fleet, 'POST', '/v1/jobs', {
    name: 'dashboard-flood',
    command: [PYTHON, '-c', printerScript(seconds)],
    placement: { nodelist: [node], ntasks: 1, cpusPerRank: 1 },
  });
  const ended = async () => TERMINAL.has((await jobState(fleet, job.id))?.state ?? 'gone');
  const stop = onTeardown(`flood job ${job.id}`, async () => {
    if (await ended()) return;
    // a 409 means it ended between the look and the cancel: only an error if it has not
    await api(fleet, 'POST', `/v1/jobs/${job.id}/cancel`).catch(async (err: unknown) => {
      if (!(await ended())) throw err;
    });
    if (!(await waitFor(ended, END_TIMEOUT_MS, 250)))
      throw new Error(`flood job ${job.id} did not end within ${END_TIMEOUT_MS / 1000} s of its cancel`);
  });
  let state = '';
  const running = await waitFor(
    async () => (state = (await jobState(fleet, job.id))?.state ?? 'missing') === 'running',
    START_TIMEOUT_MS,
    100,
  );
  if (!running) {
    await stop();
    throw new Error(`flood job ${job.id} is ${state}, not running, after ${START_TIMEOUT_MS / 1000} s`);
  }
  return { id: job.id, stop };
}
