// One error shape for every REST failure: fastify's, plus our stable `code`.
import type { IncomingMessage } from 'node:http';
import {
  ErrorCode,
  MAX_FRAME_BYTES,
  RankdError,
  errorDefinition,
  type HttpErrorStatus,
  type PlacementSpec,
} from '@rankd/protocol';
import type { FastifyError, FastifyInstance } from 'fastify';

const reason: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
} satisfies Record<HttpErrorStatus, string>;

/** The registry's status of a code; a code it gives none (or an undefined one) is a failure of ours. */
export function httpStatusFor(code: string): number {
  return errorDefinition(code)?.status ?? 500;
}

export function errorBody(statusCode: number, code: string, message: string, suggestion?: Partial<PlacementSpec>) {
  return { statusCode, code, error: reason[statusCode] ?? 'Error', message, ...(suggestion ? { suggestion } : {}) };
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler(async (err: FastifyError | RankdError, request, reply) => {
    if (err instanceof RankdError) {
      const status = httpStatusFor(err.code);
      return reply.code(status).send(errorBody(status, err.code, err.message, suggestionOf(err)));
    }
    if (err.validation) {
      return reply.code(400).send(errorBody(400, ErrorCode.InvalidRequest, `invalid request: ${err.message}`));
    }
    const status = err.statusCode ?? 500;
    if (status === 413) {
      const code = request.url.startsWith('/v1/enroll') ? ErrorCode.CsrTooLarge : ErrorCode.TooLarge;
      if (request.principal === null) {
        // Nobody vouches for this body: reading it to its end would spend the event loop that
        // carries the agents' heartbeats (and /healthz) on an anonymous sender, as fast as a
        // flood of 1 MiB bodies arrives. Answer and stop reading; the connection closes.
        reply.header('connection', 'close');
        reply.raw.once('finish', () => stopReading(request.raw));
        return reply.code(413).send(errorBody(413, code, err.message));
      }
      // Answer only once the client has stopped sending (or after a bounded drain): closing a
      // socket with unread data resets it, and the reset can destroy the 413 before the
      // client, or a proxy in between, reads it.
      await drainRequest(request.raw, 8 * MAX_FRAME_BYTES, 5000);
      return reply.code(413).send(errorBody(413, code, err.message));
    }
    if (status >= 400 && status < 500) {
      // malformed JSON, wrong content type, …: fastify's own FST_ codes become ours, its text stays
      return reply.code(status).send(errorBody(status, ErrorCode.InvalidRequest, err.message));
    }
    request.log.error({ err }, 'request failed');
    return reply.code(500).send(errorBody(500, ErrorCode.Internal, 'internal error; see the controller log'));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, ErrorCode.NotFound, `no route ${request.method} ${request.url.split('?')[0]}`));
  });
}

/** How long a refused anonymous sender has to read its 413 before its connection is dropped. */
const REFUSED_LINGER_MS = 2000;

/**
 * Ends the connection of a refused anonymous body without reading the rest of it. Node has
 * half-closed it (Connection: close) and would destroy it once the 413 is flushed; with the
 * sender's bytes still unread that close is a reset, which can reach a client still writing
 * before the 413 does. So reading stops, the 413 and the FIN go out, and the socket is
 * destroyed when the client closes it or after REFUSED_LINGER_MS.
 */
function stopReading(raw: IncomingMessage): void {
  const socket = raw.socket;
  socket.pause();
  socket.removeListener('finish', socket.destroy);
  const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
  socket.once('close', () => clearTimeout(linger));
  socket.end();
}

/** Reads and drops the rest of a request body: until it ends, maxBytes more arrived, or maxMs passed. */
function drainRequest(raw: IncomingMessage, maxBytes: number, maxMs: number): Promise<void> {
  if (raw.complete || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const done = (): void => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', done);
      raw.off('close', done);
      raw.off('error', done);
      raw.pause();
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      seen += chunk.length;
      if (seen > maxBytes) done();
    };
    const timer = setTimeout(done, maxMs);
    raw.on('data', onData);
    raw.once('end', done);
    raw.once('close', done);
    raw.once('error', done);
    raw.resume();
  });
}

/** The planner's nearest feasible spec, which a client turns into a command to paste. */
function suggestionOf(err: RankdError): Partial<PlacementSpec> | undefined {
  const suggestion = err.details?.['suggestion'];
  return typeof suggestion === 'object' && suggestion !== null ? suggestion : undefined;
}
