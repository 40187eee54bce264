// Where `rankd run` opens the WebSocket that carries its stdin to a job's ranks, what it
// offers, and its frames. Kept apart from TypeBox (as shell-path.ts) so that the CLI
// connects without loading it.
//
// Frames: binary, client → controller, are the bytes (never interpreted); the client's close
// is the stdin's end. Text, controller → client, are JSON events: `ack` gives back window
// (bytes that left the controller for every rank that reads them); `closed` (no rank takes
// more: they closed their stdin or ended) or `error` comes last, before the controller closes.
export const STDIN_PATH = '/v1/stdin';
export const STDIN_SUBPROTOCOL = 'rankd.stdin.v1';
/**
 * Bytes a client may have sent and not had acknowledged. The controller holds at most this
 * much of a job's stdin (plus one frame); a client that sends more is cut off.
 */
export const STDIN_WINDOW_BYTES = 1024 * 1024;
/** The largest binary frame the controller takes on the stdin socket. */
export const STDIN_MAX_FRAME_BYTES = 256 * 1024;

export type StdinEvent =
  | { type: 'ack'; bytes: number }
  | { type: 'closed'; reason: string }
  | { type: 'error'; code: string; message: string };
