// The handlers of agent messages, typed by the message tables: each receives its own
// message, validated, and the authenticated connection it came on. Modules hand the
// gateway a table keyed by message type (`{ 'pmi.fence': (conn, m) => … }`), so the
// type of `m` follows from the key.
import {
  AgentBinaryMessages,
  AgentMessages,
  isMessageOf,
  type AgentBinaryMessage,
  type AgentMessage,
  type Message,
} from '@rankd/protocol';
import type { AgentLink } from '../nodes/node-registry.js';

/** A connection whose hello named the node of its certificate: everything on it speaks for `name`. */
export interface AuthenticatedAgent extends AgentLink {
  readonly name: string;
}

/** Text messages a handler may serve: all but the hello, which the connection itself takes. */
export type AgentMessageType = Exclude<AgentMessage['type'], 'hello'>;
export type AgentBinaryMessageType = AgentBinaryMessage['type'];

/** The handler of an agent's text messages of `type` K. */
export type AgentHandler<K extends AgentMessageType> = (
  conn: AuthenticatedAgent,
  message: Message<AgentMessage, K>,
) => void;
/** The handler of binary frames of `type` K: their header, and the raw bytes after it. */
export type AgentBinaryHandler<K extends AgentBinaryMessageType> = (
  conn: AuthenticatedAgent,
  message: Message<AgentBinaryMessage, K>,
  payload: Buffer,
) => void;

type TextHandlers = { [K in AgentMessageType]?: AgentHandler<K> };
type BinaryHandlers = { [K in AgentBinaryMessageType]?: AgentBinaryHandler<K> };
/** Handlers by message type, as a module registers them with the gateway. */
export type AgentHandlers = TextHandlers & BinaryHandlers;

/** Runs a handler's call in a context (the controller's write batch). */
export type Around = (work: () => void) => void;

type TextEntry = (conn: AuthenticatedAgent, message: AgentMessage) => void;
type BinaryEntry = (conn: AuthenticatedAgent, message: AgentBinaryMessage, payload: Buffer) => void;

/** Every registered handler, by type; a type is served by one handler only. */
export class AgentHandlerTable {
  private readonly text = new Map<string, TextEntry>();
  private readonly binary = new Map<string, BinaryEntry>();

  /** Registers a module's handlers; with `around`, each of their calls runs inside it. */
  add(handlers: AgentHandlers, around?: Around): void {
    for (const type of AgentMessages.types) if (type !== 'hello') this.addText(handlers, type, around);
    for (const type of AgentBinaryMessages.types) this.addBinary(handlers, type, around);
  }

  /** Runs the handler of a text message; false when none serves its type. */
  dispatch(conn: AuthenticatedAgent, message: AgentMessage): boolean {
    const entry = this.text.get(message.type);
    entry?.(conn, message);
    return entry !== undefined;
  }

  /** Runs the handler of a binary frame; false when none serves its type. */
  dispatchBinary(conn: AuthenticatedAgent, message: AgentBinaryMessage, payload: Buffer): boolean {
    const entry = this.binary.get(message.type);
    entry?.(conn, message, payload);
    return entry !== undefined;
  }

  private addText<K extends AgentMessageType>(handlers: TextHandlers, type: K, around: Around | undefined): void {
    const handler: AgentHandler<K> | undefined = handlers[type];
    if (!handler) return;
    this.claim(this.text, type);
    // each entry hands its handler only the message of its own type (checked, not asserted)
    this.text.set(
      type,
      around
        ? (conn, m) => {
            if (isMessageOf(m, type)) around(() => handler(conn, m));
          }
        : (conn, m) => {
            if (isMessageOf(m, type)) handler(conn, m);
          },
    );
  }

  private addBinary<K extends AgentBinaryMessageType>(
    handlers: BinaryHandlers,
    type: K,
    around: Around | undefined,
  ): void {
    const handler: AgentBinaryHandler<K> | undefined = handlers[type];
    if (!handler) return;
    this.claim(this.binary, type);
    this.binary.set(
      type,
      around
        ? (conn, m, payload) => {
            if (isMessageOf(m, type)) around(() => handler(conn, m, payload));
          }
        : (conn, m, payload) => {
            if (isMessageOf(m, type)) handler(conn, m, payload);
          },
    );
  }

  private claim(entries: ReadonlyMap<string, unknown>, type: string): void {
    if (entries.has(type)) throw new Error(`agent message handler registered twice: ${type}`);
  }
}
