// The attempts one log stream covers, in turn (GET /v1/jobs/:id/logs). Each attempt wrote
// its own files, so each is read by its own follower, its offsets starting at 0.
//
// Without `follow`: attempt K alone (`attempt=K`), or every attempt that started, oldest
// first. With `follow`: from the first attempt (or K, or the attempt a resume token names)
// on; when a followed attempt fails and the job restarts, a `restart` line, then `queued`
// lines while the job waits, `started`, and the next attempt's output, until the job's end.
// An attempt's output is opened by an `attempt` line unless the job has had only its first
// attempt: such a job's stream is what it was before jobs restarted.
import type { StreamName } from '@rankd/protocol';
import type { AttemptView, JobView, LogAttempt, LogEnd, LogQuery, LogRestart } from '@rankd/protocol';
import { cursorKey } from '@rankd/protocol/log-cursor';
import type { JobManager } from '../../jobs/job-manager.js';
import { attemptId } from '../../jobs/job-records.js';
import { LogFollower, type Cursor, type LogOrder, type LogSink } from '../../jobs/log-follower.js';

export interface AttemptSink extends LogSink {
  /** The attempt whose records are being written (SSE ids name it). */
  attempt: number;
  queued(reason: string): void;
  started(state: string): void;
  heading(attempt: LogAttempt): void;
  restart(restart: LogRestart): void;
  end(summary: LogEnd | null): void;
}

export interface StreamRequest {
  jobId: string;
  query: LogQuery;
  /** The ranks asked for; null for all. */
  wanted: number[] | null;
  streams: StreamName[];
  /** Where a reconnecting reader stood (Last-Event-ID). */
  resume: { attempt: number | null; offsets: Map<string, number> };
}

/** The reader of the stream: whether it went away (closed, or revoked), and how to wait for a queued job. */
export interface StreamReader {
  left: boolean;
  /** Set while a follower reads: stops it, and ends its wait. */
  onLeave: (() => void) | null;
  whileQueued(report: (reason: string) => void): Promise<'started' | 'ended' | 'closed'>;
}

export async function streamAttempts(jobs: JobManager, req: StreamRequest, sink: AttemptSink, reader: StreamReader) {
  const { query, jobId } = req;
  const follow = query.follow ?? false;
  const only = query.attempt;
  // a resumed reader goes on in the attempt it stood in, without its heading again
  const resumed = req.resume.attempt;
  const list = follow
    ? null
    : only !== undefined
      ? [only]
      : jobs
          .view(jobId)!
          .attempts.map((a) => a.attempt)
          .filter((a) => resumed === null || a >= resumed);
  let k = list ? (list[0] ?? 0) : (only ?? resumed ?? 0);
  let restarted = false;
  for (let i = 0; ; i++) {
    let view = jobs.view(jobId)!;
    let waited = false;
    if (follow && view.state === 'queued' && view.attempt === k) {
      // followers of a queued job hear why it waits, then its output from the start
      const outcome = await reader.whileQueued((reason) => sink.queued(reason));
      if (outcome === 'closed' || reader.left) return;
      view = jobs.view(jobId)!;
      waited = outcome === 'started';
    }
    const attempt = view.attempts.find((a) => a.attempt === k);
    if (!attempt) break; // never started: ended in the queue, or not started yet
    if (waited || restarted) sink.started(view.state);
    const headed = only === undefined && (view.attempts.length > 1 || k > 0) && !(k === resumed && i === 0);
    if (headed) sink.heading({ attempt: k, nodes: attempt.nodes, startedAt: attempt.startedAt });
    const offsets = k === resumed && i === 0 ? req.resume.offsets : new Map<string, number>();
    sink.attempt = k;
    const over = await readAttempt(jobs, attemptId(jobId, k), cursorsOf(req, ranksOf(jobs, view, k), offsets), {
      sink,
      follow,
      order: query.order ?? 'stream',
      reader,
    });
    if (over === null) return;
    if (list) {
      if (i + 1 >= list.length) break;
      k = list[i + 1]!;
      continue;
    }
    // followed: the attempt is over; the job ended with it, or restarts
    const after = jobs.view(jobId)!;
    if (only !== undefined || after.attempt === k) break;
    const failed = after.attempts.find((a) => a.attempt === k)!;
    sink.restart(restartOf(after, failed));
    k++;
    restarted = true;
  }
  sink.end(endOf(jobs, jobs.view(jobId)!, only));
}

/** Reads one attempt: true when it is over, false at the end of what it stored so far, null when the reader left. */
function readAttempt(
  jobs: JobManager,
  id: string,
  cursors: Cursor[],
  how: { sink: LogSink; follow: boolean; order: LogOrder; reader: StreamReader },
): Promise<boolean | null> {
  const { reader } = how;
  if (reader.left) return Promise.resolve(null);
  return new Promise((resolve) => {
    const follower = new LogFollower(jobs, id, cursors, how.sink, how.follow, how.order, (over) => {
      reader.onLeave = null;
      resolve(over);
    });
    reader.onLeave = () => {
      reader.onLeave = null;
      follower.stop();
      resolve(null);
    };
    follower.start();
  });
}

/**
 * The ranks of attempt k: those of the job's current attempt, or as many as its world size
 * (every attempt of a job has the same spec, so the same world size).
 */
function ranksOf(jobs: JobManager, view: JobView, k: number): number[] {
  if (view.attempt === k && view.ranks.length > 0) return view.ranks.map((r) => r.rank);
  const world = view.ranks.length || jobs.current(view.id)?.demand?.ranks || 0;
  return Array.from({ length: world }, (_, r) => r);
}

function cursorsOf(req: StreamRequest, ranks: number[], resume: Map<string, number>): Cursor[] {
  const selected = req.wanted ? ranks.filter((r) => req.wanted!.includes(r)) : ranks;
  return selected.flatMap((rank) =>
    req.streams.map((stream) => ({
      rank,
      stream,
      offset: resume.get(cursorKey(rank, stream)) ?? req.query.offset ?? 0,
    })),
  );
}

function restartOf(view: JobView, a: AttemptView): LogRestart {
  return {
    attempt: a.attempt,
    maxRestarts: view.maxRestarts,
    failure: a.firstFailure,
    reason: a.reason,
    excluded: a.excluded,
    delay: a.restartDelay ?? 0,
  };
}

/** How the job ended, or attempt K when only it was asked for; null while it goes on. */
function endOf(jobs: JobManager, view: JobView, only: number | undefined): LogEnd | null {
  if (only !== undefined) {
    const a = view.attempts.find((x) => x.attempt === only);
    // the current attempt of an ended job ended as the job did
    if (!a || a.endedAt === null) return null;
    return { state: a.state, reason: a.reason, exitCode: a.exitCode };
  }
  return jobs.isEnded(view.id) ? { state: view.state, reason: view.reason, exitCode: view.exitCode } : null;
}
