// HTTP statuses of fleet error codes. The API's global handler knows only its own codes
// (anything else is a 500); the fleet route plugins install this handler in their own
// encapsulated scope and hand every other error on to the global one.
import { FleetErrorCode, RankdError } from '@rankd/protocol';
import type { FastifyInstance } from 'fastify';
import { errorBody } from '../../api/errors.js';

const STATUS: Record<string, number> = {
  [FleetErrorCode.InventoryParse]: 400,
  [FleetErrorCode.PatternUnknown]: 400,
  [FleetErrorCode.PatternInvalid]: 400,
  [FleetErrorCode.AgentUnreachable]: 503,
  [FleetErrorCode.MissingCapability]: 409,
};

export function installFleetErrors(app: FastifyInstance): void {
  app.setErrorHandler((err, _request, reply) => {
    const status = err instanceof RankdError ? STATUS[err.code] : undefined;
    if (status === undefined) throw err;
    return reply.code(status).send(errorBody(status, (err as RankdError).code, (err as RankdError).message));
  });
}
