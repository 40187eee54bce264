import Type from 'typebox';
import { PlacementSpec } from '../plan.js';

/** Every REST error: fastify's shape, with our stable `code`. */
export const ErrorBody = Type.Object({
  statusCode: Type.Integer(),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
  /** A placement the planner refused: the nearest spec that plans, as the fields to change. */
  suggestion: Type.Optional(PlacementSpec),
});
export type ErrorBody = Type.Static<typeof ErrorBody>;

export const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  uptimeSeconds: Type.Number(),
});
export type Health = Type.Static<typeof Health>;
