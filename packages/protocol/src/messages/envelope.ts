// The envelope every frame shares: `{ type, id?, ... }`. `id` correlates a request
// with its reply; fire-and-forget messages leave it out.
import Type from 'typebox';

export const MessageId = Type.Optional(Type.String({ minLength: 1, maxLength: 128 }));

/** Builds the schema of one message type: its literal `type`, an optional `id`, its fields. */
export function message<const Name extends string, const P extends Type.TProperties>(type: Name, properties: P) {
  return Type.Object(
    { type: Type.Literal(type), id: MessageId, ...properties },
    { additionalProperties: false, $id: type },
  );
}
