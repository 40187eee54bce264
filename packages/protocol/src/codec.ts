// Decoding frames against a dispatch map of known message types.
//
// Dispatch is by lookup in a Map built from the schemas themselves: a type that is
// not in the map is refused, never "handled by default" (the Salt lesson).
import type Type from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { ErrorCode } from './errors.js';

export interface MessageSpec<S extends Type.TObject = Type.TObject> {
  readonly type: string;
  readonly schema: S;
  /** Compiled on first use: a CLI that never decodes a frame never pays for the compiler. */
  readonly validator: Validator<{}, S>;
}

export type MessageMap = ReadonlyMap<string, MessageSpec>;

/** Builds the dispatch map for one direction of the protocol. */
export function defineMessages(schemas: readonly Type.TObject[]): MessageMap {
  const map = new Map<string, MessageSpec>();
  for (const schema of schemas) {
    const type = (schema.properties as Record<string, { const?: unknown }>)['type']?.const;
    if (typeof type !== 'string') throw new Error(`message schema without a literal type: ${JSON.stringify(schema)}`);
    if (map.has(type)) throw new Error(`message type defined twice: ${type}`);
    let validator: MessageSpec['validator'] | null = null;
    map.set(type, {
      type,
      schema,
      get validator() {
        return (validator ??= Compile(schema) as MessageSpec['validator']);
      },
    });
  }
  return map;
}

export type Decoded =
  | { ok: true; type: string; message: { type: string; id?: string } & Record<string, unknown> }
  | { ok: false; code: string; error: string; type?: string; id?: string };

/** Parses and validates one frame. Never throws. */
export function decodeFrame(data: string | Buffer, messages: MessageMap): Decoded {
  let value: unknown;
  try {
    value = JSON.parse(typeof data === 'string' ? data : data.toString('utf8'));
  } catch (err) {
    return { ok: false, code: ErrorCode.BadFrame, error: `frame is not JSON: ${(err as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, code: ErrorCode.BadFrame, error: 'frame is not a JSON object' };
  }
  const obj = value as Record<string, unknown>;
  const type = obj['type'];
  const id = typeof obj['id'] === 'string' ? obj['id'] : undefined;
  if (typeof type !== 'string') {
    return { ok: false, code: ErrorCode.BadFrame, error: 'frame has no string "type"', ...(id ? { id } : {}) };
  }
  const spec = messages.get(type);
  if (!spec) {
    return { ok: false, code: ErrorCode.UnknownType, error: `unknown message type "${type.slice(0, 64)}"`, type, ...(id ? { id } : {}) };
  }
  if (!spec.validator.Check(obj)) {
    return { ok: false, code: ErrorCode.InvalidMessage, error: `invalid "${type}": ${describeErrors(spec, obj)}`, type, ...(id ? { id } : {}) };
  }
  return { ok: true, type, message: obj as Decoded extends { ok: true; message: infer M } ? M : never };
}

/** The first few schema violations, as "path: reason" — enough to fix the sender. */
export function describeErrors(spec: MessageSpec, value: unknown, limit = 3): string {
  const out: string[] = [];
  for (const e of spec.validator.Errors(value)) {
    const err = e as { instancePath?: string; message?: string };
    out.push(`${err.instancePath || '/'} ${err.message ?? 'is invalid'}`);
    if (out.length >= limit) break;
  }
  return out.join('; ') || 'does not match the schema';
}
