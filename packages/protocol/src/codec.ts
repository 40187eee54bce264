// Decoding frames against a table of known message types, one table per direction.
//
// Dispatch is by lookup in a Map built from the schemas themselves: a type that is
// not in the map is refused, never "handled by default" (the Salt lesson). The table
// also carries, at the type level, the union of its messages: what a decoded frame is,
// what a sender may send, and which message each handler of a `type` receives.
import type Type from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { ErrorCode } from './errors.js';

/** What every frame has: its `type`, and an `id` when it is part of a request. */
export interface WireMessage {
  type: string;
  id?: string;
}

/** A message's schema: an object whose `type` is a string literal (envelope.ts `message()` builds them). */
export type MessageSchema = Type.TSchema & { properties: { type: Type.TLiteral<string> } };

/** The message each schema of a union describes (one member per schema, not one merged object). */
type StaticEach<S> = Extract<S extends MessageSchema ? Type.Static<S> : never, WireMessage>;

export interface MessageSpec {
  readonly type: string;
  readonly schema: MessageSchema;
  /** Compiled on first use: a CLI that never decodes a frame never pays for the compiler. */
  readonly validator: Validator;
}

/** A spec of a table: its check says which message of the table a value is. */
export interface TableSpec<S extends MessageSchema> extends MessageSpec {
  /** The validator of this `type`'s own schema: what passes it is that message of the table. */
  check(value: unknown): value is StaticEach<S>;
}

/** The message types of one direction, from the union of their schemas `S` (MessageOf gives their messages). */
export class MessageTable<S extends MessageSchema = MessageSchema> {
  private readonly specs = new Map<string, TableSpec<S>>();
  /** Every `type` of the table, in the order defined. */
  readonly types: ReadonlyArray<S['properties']['type']['const']>;

  constructor(schemas: readonly S[]) {
    const types: Array<S['properties']['type']['const']> = [];
    for (const schema of schemas) {
      const type = schema.properties.type.const;
      if (typeof type !== 'string') throw new Error(`message schema without a literal type: ${JSON.stringify(schema)}`);
      if (this.specs.has(type)) throw new Error(`message type defined twice: ${type}`);
      let validator: Validator | null = null;
      const compiled = () => (validator ??= Compile(schema));
      this.specs.set(type, {
        type,
        schema,
        get validator() {
          return compiled();
        },
        check: (value: unknown): value is StaticEach<S> => compiled().Check(value),
      });
      types.push(type);
    }
    this.types = types;
  }

  get(type: string): TableSpec<S> | undefined {
    return this.specs.get(type);
  }

  keys(): IterableIterator<string> {
    return this.specs.keys();
  }
}

/** A table with its messages' types erased: what a function takes that serves either direction. */
export type MessageMap = MessageTable;

/** The union of the messages of a table: `MessageOf<typeof AgentMessages>`. */
export type MessageOf<T> = T extends MessageTable<infer S> ? StaticEach<S> : never;

/** The message of `type` K in a union of messages: `Message<AgentMessage, 'pmi.fence'>` is PmiFence. */
export type Message<M extends WireMessage, K extends M['type']> = Extract<M, { type: K }>;

/**
 * Whether `message` is the one of `type` in its union: how a dispatcher that keeps its
 * handlers by type hands each one its own message, checked rather than asserted.
 */
export function isMessageOf<M extends WireMessage, K extends M['type']>(message: M, type: K): message is Message<M, K> {
  return message.type === type;
}

/** A message of a union before its sender gives it an `id` (request/reply correlation adds it). */
export type WithoutId<M extends WireMessage> = M extends WireMessage ? Omit<M, 'id'> : never;

/** Builds the table of one direction of the protocol. */
export function defineMessages<const S extends MessageSchema>(schemas: readonly S[]): MessageTable<S> {
  return new MessageTable(schemas);
}

export type Decoded<M extends WireMessage = WireMessage> =
  { ok: true; type: M['type']; message: M } | { ok: false; code: string; error: string; type?: string; id?: string };

/** Parses and validates one frame. Never throws. */
export function decodeFrame<S extends MessageSchema>(
  data: string | Buffer,
  messages: MessageTable<S>,
): Decoded<StaticEach<S>> {
  let value: unknown;
  try {
    value = JSON.parse(typeof data === 'string' ? data : data.toString('utf8'));
  } catch (err) {
    return {
      ok: false,
      code: ErrorCode.BadFrame,
      error: `frame is not JSON: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (!isRecord(value)) return { ok: false, code: ErrorCode.BadFrame, error: 'frame is not a JSON object' };
  const type = value['type'];
  const id = typeof value['id'] === 'string' ? value['id'] : undefined;
  if (typeof type !== 'string') {
    return { ok: false, code: ErrorCode.BadFrame, error: 'frame has no string "type"', ...(id ? { id } : {}) };
  }
  const spec = messages.get(type);
  if (!spec) {
    return {
      ok: false,
      code: ErrorCode.UnknownType,
      error: `unknown message type "${type.slice(0, 64)}"`,
      type,
      ...(id ? { id } : {}),
    };
  }
  if (!spec.check(value)) {
    return {
      ok: false,
      code: ErrorCode.InvalidMessage,
      error: `invalid "${type}": ${describeErrors(spec, value)}`,
      type,
      ...(id ? { id } : {}),
    };
  }
  return { ok: true, type: value.type, message: value };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first few schema violations, as "path: reason" — enough to fix the sender. */
export function describeErrors(spec: MessageSpec, value: unknown, limit = 3): string {
  const out: string[] = [];
  for (const e of spec.validator.Errors(value)) {
    out.push(`${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
    if (out.length >= limit) break;
  }
  return out.join('; ') || 'does not match the schema';
}
