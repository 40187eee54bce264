// Wire-level constants shared by both ends of the agent gateway.

/** Where `rankd controller` and `rankd up` listen unless told otherwise (on loopback). */
export const DEFAULT_CONTROLLER_PORT = 7480;

/** The WebSocket subprotocol; a peer that does not offer it is refused. */
export const SUBPROTOCOL = 'rankd.v1';

/** Largest frame either end accepts. Facts of a 1,024-CPU node are ~300 KiB. */
export const MAX_FRAME_BYTES = 1024 * 1024;

/** Header carrying the cluster join token in the upgrade request. */
export const JOIN_TOKEN_HEADER = 'authorization';

export const CloseCode = {
  /** RFC 6455: the frame was larger than MAX_FRAME_BYTES. */
  TooLarge: 1009,
  /** The first frame was not a valid hello, or none came in time. */
  BadHello: 4400,
  /** Another connection registered the same node name; the newer one wins. */
  Superseded: 4409,
  /** The peer stopped answering pings. */
  Dead: 4408,
  /** The controller is shutting down; reconnect with backoff. */
  ShuttingDown: 4503,
  /** The hello named a node other than the one in the connection's certificate. */
  IdentityMismatch: 4403,
  /**
   * The node's certificate was revoked (`rankd node remove`); do not reconnect with it. A
   * shell WebSocket is closed with the same code (reason RANKD_CREDENTIAL_REVOKED) when the
   * token or user that opened it is revoked or removed.
   */
  Revoked: 4401,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
