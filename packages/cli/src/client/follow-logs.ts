// Streams a job's output to this terminal: labelled lines, stdout to stdout and
// stderr to stderr, with backpressure from our own stdout, and a transparent
// reconnect (from the last event id) if the controller restarts mid-job. A job that
// restarts is followed into its next attempts: each writes its own streams, from offset 0.
import type { JobView, RankMap } from '@rankd/protocol';
import type { NodeWarning } from '@rankd/protocol/rank-warnings';
import { cursorKey, encodeResume, type LogCursor } from '@rankd/protocol/log-cursor';
import { CliError, ExitCode } from '../exit-codes.js';
import type { ClientConfig } from './config.js';
import { openStream } from './rest.js';
import { LineLabeler, renderLabel } from './line-labeler.js';
import { readLogFrames, type AttemptFrame, type RestartFrame } from './log-frames.js';

export interface FollowOptions {
  /** Label template, e.g. "{rank}: "; empty for raw output. */
  label: string;
  ranks?: number[];
  stream?: 'stdout' | 'stderr';
  offset?: number;
  /** false: deliver what is stored and stop. */
  follow?: boolean;
  /** time: all ranks' output in the order it was stored (what `rankd logs` shows); default stream by stream. */
  order?: 'time';
  /** Put each line's RFC 3339 time before its label (with order time). */
  timestamps?: boolean;
  /** Keep trying this long when the controller goes away mid-stream. */
  reconnectForMs?: number;
  signal?: AbortSignal;
  /** The job waits in the queue, for this reason (again when the reason changes). */
  onQueued?: (reason: string) => void;
  /**
   * The job (or its next attempt, after a restart) started: returns its view (with the rank
   * map the labels need). Called once per attempt, before its output.
   */
  onStarted?: () => Promise<JobView>;
  /** Only this attempt (0-based); default every attempt. */
  attempt?: number;
  /** An attempt's output begins (sent when the job has had more than one attempt). */
  onAttempt?: (attempt: AttemptFrame) => void;
  /** A followed attempt failed and the job restarts: its next attempt's output follows. */
  onRestart?: (restart: RestartFrame) => void;
  /** A warning the ranks of one node carry (followed jobs only), once per node and message. */
  onWarning?: (warning: NodeWarning) => void;
}

export interface FollowEnd {
  state: string;
  reason: string;
  exitCode: number | null;
}

/** The stamp of bytes no stored event dates (a controller crashed between storing them and recording it): as wide as a time. */
const UNKNOWN_TIME = '-'.padEnd('2026-01-01T00:00:00.000Z'.length);

export async function followLogs(
  config: ClientConfig,
  job: JobView,
  options: FollowOptions,
): Promise<FollowEnd | null> {
  // the rank map of each attempt the labels know: the job's current one, then each that starts
  const maps = new Map<number, RankMap | null>([[job.attempt, job.rankMap]]);
  const ranksOf: { map: RankMap | null } = { map: job.rankMap };
  /** The attempt whose output comes now: what a reconnect resumes. */
  let attempt = options.attempt ?? 0;
  // a job queued when it was submitted may have started before this stream asked, without a
  // "started" frame: its first output then stands for it
  let started = job.rankMap !== null;
  const start = async () => {
    if (started) return;
    started = true;
    if (!options.onStarted) return;
    const view = await options.onStarted();
    maps.set(view.attempt, view.rankMap);
    ranksOf.map = view.rankMap;
  };
  const labelers = new Map<string, LineLabeler>();
  const labeler = (rank: number, stream: 'stdout' | 'stderr') => {
    const key = `${rank}/${stream}`;
    let l = labelers.get(key);
    if (!l) {
      const entry = ranksOf.map?.ranks[rank];
      const label = renderLabel(options.label, {
        rank,
        node: entry?.node ?? '?',
        localRank: entry?.localRank ?? 0,
        stream,
      });
      const out = stream === 'stdout' ? process.stdout : process.stderr;
      // once stdout's reader is gone (closed-stdout.ts) its output has nowhere to go
      labelers.set(key, (l = new LineLabeler(label, (bytes) => out.destroyed || out.write(bytes))));
    }
    return l;
  };
  const query = {
    follow: options.follow ?? true,
    format: 'frames' as const,
    rank: options.ranks?.join(','),
    stream: options.stream,
    offset: options.offset,
    order: options.order,
    attempt: options.attempt,
  };

  // where each stream is, so that a reconnect resumes there (the same token as SSE's Last-Event-ID)
  const positions = new Map<string, LogCursor>();
  // an attempt's streams are its own: lines and positions of the last one end with it
  const nextAttempt = (k: number) => {
    for (const l of labelers.values()) l.flush();
    labelers.clear();
    positions.clear();
    attempt = k;
    ranksOf.map = maps.get(k) ?? null;
  };
  let downSince: number | null = null;
  for (;;) {
    try {
      const token = positions.size === 0 && attempt === 0 ? '' : encodeResume(attempt, positions.values());
      const res = await openStream(config, 'GET /v1/jobs/:id/logs', {
        params: { id: job.id },
        query,
        signal: options.signal ?? new AbortController().signal,
        ...(token ? { headers: { 'last-event-id': token } } : {}),
      });
      downSince = null;
      for await (const frame of readLogFrames(res)) {
        if (frame.kind === 'end') {
          for (const l of labelers.values()) l.flush();
          return { state: frame.state, reason: frame.reason, exitCode: frame.exitCode };
        }
        if (frame.kind === 'queued') {
          options.onQueued?.(frame.reason);
          continue;
        }
        if (frame.kind === 'started') {
          // no output comes before this frame, so the labels see the rank map
          await start();
          continue;
        }
        if (frame.kind === 'attempt') {
          if (frame.attempt !== attempt) nextAttempt(frame.attempt);
          options.onAttempt?.(frame);
          continue;
        }
        if (frame.kind === 'restart') {
          nextAttempt(frame.attempt + 1);
          // the next attempt's rank map comes with its start
          started = false;
          options.onRestart?.(frame);
          continue;
        }
        if (frame.kind === 'warning') {
          // a warning comes with its node's ranks' start: after the header
          if (!started) await start();
          options.onWarning?.(frame);
          continue;
        }
        if (!started) await start();
        positions.set(cursorKey(frame.rank, frame.stream), {
          rank: frame.rank,
          stream: frame.stream,
          offset: frame.offset + frame.data.length,
        });
        const out = frame.stream === 'stdout' ? process.stdout : process.stderr;
        // our own stdout is slow (a pipe into less, a slow terminal): wait, do not buffer without bound
        const time = options.timestamps ? (frame.time ?? UNKNOWN_TIME) : undefined;
        if (!labeler(frame.rank, frame.stream).push(frame.data, time)) await writable(out);
      }
      // the stream ended without an end event: all stored output was asked for, or the controller went away
      if (options.follow === false) {
        for (const l of labelers.values()) l.flush();
        return null;
      }
    } catch (err) {
      if (options.signal?.aborted) return null;
      if (!(err instanceof CliError) || err.exitCode !== ExitCode.Unreachable) {
        if (!isStreamReset(err)) throw err;
      }
    }
    downSince ??= Date.now();
    if (Date.now() - downSince > (options.reconnectForMs ?? 60_000)) {
      for (const l of labelers.values()) l.flush();
      throw new CliError(
        `lost the controller while following job ${job.id}; "rankd logs ${job.id} -f" resumes`,
        ExitCode.Unreachable,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** node:http's ways of saying the connection went away mid-body. */
function isStreamReset(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'EPIPE';
}

/** Resolves when `out` takes writes again, or when it closed (its reader went away). */
function writable(out: NodeJS.WriteStream): Promise<void> {
  if (out.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
  });
}
