// Session messages: how an agent joins, stays alive and updates its facts.
import Type from 'typebox';
import { Facts } from '../facts.js';
import { message } from './envelope.js';

export const NodeName = Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' });
export const Labels = Type.Record(
  Type.String({ minLength: 1, maxLength: 63, pattern: '^[A-Za-z0-9._/-]+$' }),
  Type.String({ maxLength: 253 }),
  { maxProperties: 64, additionalProperties: false },
);

/** agent → controller, first frame of every connection. */
export const Hello = message('hello', {
  name: NodeName,
  version: Type.String({ maxLength: 64 }),
  /** What this agent can do, e.g. "facts", "exec", "pty"; the controller adapts to it. */
  capabilities: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64 }),
  labels: Labels,
  /** Address other nodes reach this one at; the controller falls back to the peer address. */
  address: Type.Optional(Type.String({ maxLength: 64 })),
  facts: Type.Optional(Facts),
  bootId: Type.Optional(Type.String({ maxLength: 64 })),
});
export type Hello = Type.Static<typeof Hello>;

/** controller → agent, the reply to a valid hello. */
export const Welcome = message('welcome', {
  controllerVersion: Type.String({ maxLength: 64 }),
  /** How often the agent must send a heartbeat. */
  heartbeatMs: Type.Integer({ minimum: 100, maximum: 600_000 }),
  /** After this long without a heartbeat the node is unreachable. */
  ttlMs: Type.Integer({ minimum: 100 }),
});
export type Welcome = Type.Static<typeof Welcome>;

/** agent → controller, every heartbeatMs. */
export const Heartbeat = message('heartbeat', {
  seq: Type.Integer({ minimum: 0 }),
});
export type Heartbeat = Type.Static<typeof Heartbeat>;

/** agent → controller, whenever a periodic re-read finds different facts. */
export const FactsUpdate = message('facts', {
  hash: Type.String({ maxLength: 128 }),
  facts: Facts,
});
export type FactsUpdate = Type.Static<typeof FactsUpdate>;

/** Either direction: a request or frame was refused. The connection stays up. */
export const ErrorMessage = message('error', {
  code: Type.String({ maxLength: 64 }),
  message: Type.String({ maxLength: 4096 }),
  /** The `type` of the offending frame, when it had one. */
  inReplyTo: Type.Optional(Type.String({ maxLength: 128 })),
});
export type ErrorMessage = Type.Static<typeof ErrorMessage>;
