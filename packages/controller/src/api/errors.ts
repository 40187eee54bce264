// One error shape for every REST failure: fastify's, plus our stable `code`.
import { ErrorCode, RankdError } from '@rankd/protocol';
import type { FastifyError, FastifyInstance } from 'fastify';

/** HTTP status of each error code the API can return. */
const statusOf: Record<string, number> = {
  [ErrorCode.InvalidRequest]: 400,
  [ErrorCode.Unauthorized]: 401,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.NodeNotFound]: 404,
  [ErrorCode.TooLarge]: 413,
  [ErrorCode.JobEnded]: 409,
};

const reason: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 409: 'Conflict', 413: 'Payload Too Large', 500: 'Internal Server Error' };

export function httpStatusFor(code: string): number {
  // Planner and job errors are all about the request: 400 unless listed.
  return statusOf[code] ?? (code.startsWith('RANKD_PLAN_') ? 400 : 500);
}

export function errorBody(statusCode: number, code: string, message: string) {
  return { statusCode, code, error: reason[statusCode] ?? 'Error', message };
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | RankdError, request, reply) => {
    if (err instanceof RankdError) {
      const status = httpStatusFor(err.code);
      return reply.code(status).send(errorBody(status, err.code, err.message));
    }
    if (err.validation) {
      return reply.code(400).send(errorBody(400, ErrorCode.InvalidRequest, `invalid request: ${err.message}`));
    }
    const status = err.statusCode ?? 500;
    if (status === 413) return reply.code(413).send(errorBody(413, ErrorCode.TooLarge, err.message));
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
