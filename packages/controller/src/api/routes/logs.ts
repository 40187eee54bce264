// A job's output: stored, or followed live (SSE with Last-Event-ID, or NDJSON),
// filtered by rank and stream, resumable from a byte offset. A stream whose token, user
// or dashboard session is revoked ends at once (streams/open-streams.ts): with a last
// `revoked` line or event where the format has one, cut without its final chunk in text.
import {
  ErrorCode,
  LOG_FRAMES_CONTENT_TYPE,
  RankdError,
  type LogAttempt,
  type LogEnd,
  type LogRestart,
  type StreamName,
} from '@rankd/protocol';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { JobManager } from '../../jobs/job-manager.js';
import { decodeResume } from '@rankd/protocol/log-cursor';
import type { LogChunk } from '../../jobs/log-follower.js';
import { streamAttempts, type AttemptSink, type StreamReader } from './log-attempts.js';
import type { AccessControl } from '../auth.js';
import { endResponse } from '../end-response.js';
import { serveRoutes } from '../route-table.js';
import { streamOwner, type StreamEnd } from '../../streams/open-streams.js';
import { warningsByNode, type NodeWarning } from '@rankd/protocol/rank-warnings';

const KEEPALIVE_MS = 15_000;

export async function logsRoutes(
  app: FastifyInstance,
  opts: { jobs: JobManager; access: AccessControl },
): Promise<void> {
  const { jobs, access } = opts;
  serveRoutes(app, {
    'GET /v1/jobs/:id/logs': async (request, reply) => {
      const view = jobs.view(request.params.id);
      if (!view) throw new RankdError(ErrorCode.NotFound, `unknown job "${request.params.id}"`);
      const q = request.query;
      const wanted = q.rank ? q.rank.split(',').map(Number) : null;
      // a queued job's ranks do not exist yet: they are checked once it starts
      if (view.state !== 'queued')
        for (const r of wanted ?? [])
          if (!view.ranks[r])
            throw new RankdError(
              ErrorCode.InvalidRequest,
              `job ${view.id} has no rank ${r} (world size ${view.ranks.length})`,
            );
      // the current attempt may be asked for before it starts (followed, it is waited for)
      if (q.attempt !== undefined && q.attempt > view.attempt)
        throw new RankdError(
          ErrorCode.InvalidRequest,
          `job ${view.id} has no attempt ${q.attempt}: its attempts are 0 to ${view.attempt} (0-based)`,
        );
      const format = q.format ?? (q.follow ? 'sse' : 'text');
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': CONTENT_TYPES[format],
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
      raw.flushHeaders();
      const sink = sinkFor(format, raw);
      const reader: StreamReader = {
        left: false,
        onLeave: null,
        whileQueued: (report) => whileQueued(jobs, view.id, raw, report),
      };
      const leave = () => {
        reader.left = true;
        reader.onLeave?.();
      };
      const forget = access.deps.streams.add(streamOwner(request.principal!, request.dashboardSession), (why) => {
        leave();
        sink.revoked(why);
      });
      raw.on('close', forget);
      // a followed job's warnings (RLIMIT_MEMLOCK, numactl, …) reach the terminal, not only its JSON
      // (those of the job's current attempt: a past attempt asked for alone has none to come)
      if (q.follow && format !== 'text' && (q.attempt === undefined || q.attempt === view.attempt)) {
        const stopWarnings = followWarnings(jobs, view.id, (w) => sink.status({ warning: w }));
        raw.on('close', stopWarnings);
      }
      const keepalive =
        format === 'sse' ? setInterval(() => raw.writableEnded || raw.write(': keepalive\n\n'), KEEPALIVE_MS) : null;
      raw.on('close', () => {
        if (keepalive) clearInterval(keepalive);
        leave();
      });
      const streams: StreamName[] = !q.stream || q.stream === 'all' ? ['stdout', 'stderr'] : [q.stream];
      const resume = decodeResume(String(request.headers['last-event-id'] ?? ''));
      await streamAttempts(jobs, { jobId: view.id, query: q, wanted, streams, resume }, sink, reader);
    },
  });
}

const CONTENT_TYPES = {
  text: 'text/plain; charset=utf-8',
  ndjson: 'application/x-ndjson',
  sse: 'text/event-stream',
  frames: LOG_FRAMES_CONTENT_TYPE,
} as const;

/**
 * Reports each node's warnings once, when every rank of that node has started (or failed to):
 * they arrive with the ranks' starts, and a node's ranks usually carry the same ones.
 * Returns the function that stops listening.
 */
function followWarnings(jobs: JobManager, id: string, report: (w: NodeWarning) => void): () => void {
  const told = new Set<string>();
  const check = () => {
    const view = jobs.view(id);
    if (!view) return;
    const waiting = new Set(view.ranks.filter((r) => r.state === 'pending').map((r) => r.node));
    for (const w of warningsByNode(view.ranks)) {
      // a new attempt's nodes warn again: it is a new start
      const key = `${view.attempt}\0${w.node}\0${w.message}`;
      if (waiting.has(w.node) || told.has(key)) continue;
      told.add(key);
      report(w);
    }
  };
  const onChanged = (changed: string) => changed === id && check();
  jobs.on('changed', onChanged);
  check();
  return () => jobs.off('changed', onChanged);
}

/** Resolves when the job leaves the queue (started or ended) or the reader goes away; reports each new reason. */
function whileQueued(
  jobs: JobManager,
  id: string,
  raw: FastifyReply['raw'],
  report: (reason: string) => void,
): Promise<'started' | 'ended' | 'closed'> {
  return new Promise((resolve) => {
    let last = '';
    const check = () => {
      const view = jobs.view(id);
      if (view?.state === 'queued') {
        if (view.reason !== last) report((last = view.reason));
        return;
      }
      // ended without ranks: cancelled while queued
      done(!view || view.ranks.length === 0 ? 'ended' : 'started');
    };
    const onChanged = (changed: string) => changed === id && check();
    const onClose = () => done('closed');
    const done = (outcome: 'started' | 'ended' | 'closed') => {
      jobs.off('changed', onChanged);
      raw.off('close', onClose);
      resolve(outcome);
    };
    jobs.on('changed', onChanged);
    raw.on('close', onClose);
    check();
  });
}

function sinkFor(
  format: keyof typeof CONTENT_TYPES,
  raw: FastifyReply['raw'],
): AttemptSink & { status(record: Record<string, unknown>): void; revoked(why: StreamEnd): void } {
  const write = (s: string | Buffer) => raw.write(s);
  const status = (record: Record<string, unknown>) => {
    // a queued job's reason may change after the stream was ended by a revocation
    if (raw.writableEnded) return;
    if (format === 'sse')
      raw.write(`event: ${Object.keys(record)[0]}\ndata: ${JSON.stringify(Object.values(record)[0])}\n\n`);
    else if (format === 'ndjson' || format === 'frames') raw.write(JSON.stringify(record) + '\n');
  };
  const sink = {
    attempt: 0,
    write(chunk: LogChunk, cursor: () => string) {
      if (format === 'text') return write(chunk.data);
      if (format === 'frames') {
        // the header line and the raw bytes in one write: one chunk on the wire
        const time = chunk.at === undefined ? '' : `,"time":"${new Date(chunk.at).toISOString()}"`;
        const header = Buffer.from(
          `{"rank":${chunk.rank},"stream":"${chunk.stream}","offset":${chunk.offset},"bytes":${chunk.data.length}${time}}\n`,
        );
        return write(Buffer.concat([header, chunk.data], header.length + chunk.data.length));
      }
      const record = JSON.stringify({
        rank: chunk.rank,
        stream: chunk.stream,
        offset: chunk.offset,
        bytes: chunk.data.length,
        data: chunk.data.toString('utf8'),
        ...(chunk.at === undefined ? {} : { time: new Date(chunk.at).toISOString() }),
      });
      if (format === 'ndjson') return write(record + '\n');
      // the id names the attempt after the first (log-cursor.ts encodeResume)
      const id = sink.attempt > 0 ? `a${sink.attempt}:${cursor()}` : cursor();
      return write(`id: ${id}\nevent: output\ndata: ${record}\n\n`);
    },
    onDrain(resume: () => void) {
      raw.once('drain', resume);
    },
    status,
    queued: (reason: string) => status({ queued: { reason } }),
    started: (state: string) => status({ started: { state } }),
    heading(attempt: LogAttempt) {
      // plain text has no status lines: a heading line, as tail heads each file
      if (format === 'text' && !raw.writableEnded) raw.write(textHeading(attempt));
      else status({ attempt });
    },
    restart: (restart: LogRestart) => status({ restart }),
    end(summary: LogEnd | null) {
      if (summary && format === 'sse') raw.write(`event: end\ndata: ${JSON.stringify(summary)}\n\n`);
      if (summary && (format === 'ndjson' || format === 'frames')) raw.write(JSON.stringify({ end: summary }) + '\n');
      raw.end();
    },
    revoked(why: StreamEnd) {
      if (format === 'sse') endResponse(raw, `event: revoked\ndata: ${JSON.stringify(why)}\n\n`);
      else if (format === 'ndjson' || format === 'frames') endResponse(raw, JSON.stringify({ revoked: why }) + '\n');
      // plain text has no room for it: the connection is cut, so no reader takes this for the whole log
      else endResponse(raw);
    },
  };
  return sink;
}

/** format=text's line before an attempt's bytes: "==> attempt 1 (nodes a,b; started 2026-…) <==" (0-based). */
export function textHeading(a: LogAttempt): string {
  return `==> attempt ${a.attempt} (nodes ${a.nodes.join(',')}; started ${a.startedAt}) <==\n`;
}
