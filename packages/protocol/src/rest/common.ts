import Type from 'typebox';

/** Every REST error: fastify's shape, with our stable `code`. */
export const ErrorBody = Type.Object({
  statusCode: Type.Integer(),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
  /**
   * A placement the planner refused: the nearest spec that plans, as the PlacementSpec fields
   * to change (kept loose here, so that every error of every route does not repeat the spec).
   */
  suggestion: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'PlacementSpec fields to change, e.g. {"ntasks": 2}' }),
  ),
});
export type ErrorBody = Type.Static<typeof ErrorBody>;

export const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  uptimeSeconds: Type.Number(),
});
export type Health = Type.Static<typeof Health>;
