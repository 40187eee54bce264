import Type from 'typebox';

/** Every REST error: fastify's shape, with our stable `code`. */
export const ErrorBody = Type.Object({
  statusCode: Type.Integer(),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
});
export type ErrorBody = Type.Static<typeof ErrorBody>;

export const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  uptimeSeconds: Type.Number(),
});
export type Health = Type.Static<typeof Health>;
