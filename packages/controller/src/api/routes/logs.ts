// A job's output: stored, or followed live (SSE with Last-Event-ID, or NDJSON),
// filtered by rank and stream, resumable from a byte offset. A stream whose token, user
// or dashboard session is revoked ends at once (streams/open-streams.ts): with a last
// `revoked` line or event where the format has one, cut without its final chunk in text.
import { ErrorCode, LOG_FRAMES_CONTENT_TYPE, RankdError, type StreamName } from '@rankd/protocol';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { JobManager } from '../../jobs/job-manager.js';
import { cursorKey, decodeCursors } from '@rankd/protocol/log-cursor';
import { LogFollower, type Cursor, type LogChunk, type LogEnd, type LogSink } from '../../jobs/log-follower.js';
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
      let view = jobs.view(request.params.id);
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
      let follower: LogFollower | null = null;
      let revoked = false;
      const forget = access.deps.streams.add(streamOwner(request.principal!, request.dashboardSession), (why) => {
        revoked = true;
        follower?.stop();
        sink.revoked(why);
      });
      raw.on('close', forget);
      if (view.state === 'queued' && q.follow) {
        // followers of a queued job hear why it waits, then its output from the start
        const outcome = await whileQueued(jobs, view.id, raw, (reason) => sink.status({ queued: { reason } }));
        if (outcome === 'closed' || revoked) return;
        view = jobs.view(view.id)!;
        if (outcome === 'started') sink.status({ started: { state: view.state } });
      }
      const streams: StreamName[] = !q.stream || q.stream === 'all' ? ['stdout', 'stderr'] : [q.stream];
      const resumeFrom = decodeCursors(String(request.headers['last-event-id'] ?? ''));
      const ranks = (wanted ?? view.ranks.map((r) => r.rank)).filter((r) => view.ranks[r] !== undefined);
      const cursors: Cursor[] = ranks.flatMap((rank) =>
        streams.map((stream) => ({ rank, stream, offset: resumeFrom.get(cursorKey(rank, stream)) ?? q.offset ?? 0 })),
      );
      const reader = (follower = new LogFollower(jobs, view.id, cursors, sink, q.follow ?? false, q.order ?? 'stream'));
      // a followed job's warnings (RLIMIT_MEMLOCK, numactl, …) reach the terminal, not only its JSON
      if (q.follow && format !== 'text') {
        const stopWarnings = followWarnings(jobs, view.id, (w) => sink.status({ warning: w }));
        raw.on('close', stopWarnings);
      }
      const keepalive =
        format === 'sse' ? setInterval(() => raw.writableEnded || raw.write(': keepalive\n\n'), KEEPALIVE_MS) : null;
      raw.on('close', () => {
        if (keepalive) clearInterval(keepalive);
        reader.stop();
      });
      reader.start();
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
      const key = `${w.node}\0${w.message}`;
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
): LogSink & { status(record: Record<string, unknown>): void; revoked(why: StreamEnd): void } {
  const write = (s: string | Buffer) => raw.write(s);
  return {
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
      return format === 'ndjson' ? write(record + '\n') : write(`id: ${cursor()}\nevent: output\ndata: ${record}\n\n`);
    },
    onDrain(resume) {
      raw.once('drain', resume);
    },
    status(record: Record<string, unknown>) {
      // a queued job's reason may change after the stream was ended by a revocation
      if (raw.writableEnded) return;
      if (format === 'sse')
        raw.write(`event: ${Object.keys(record)[0]}\ndata: ${JSON.stringify(Object.values(record)[0])}\n\n`);
      else if (format === 'ndjson' || format === 'frames') raw.write(JSON.stringify(record) + '\n');
    },
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
}
