// Binary frames: bulk bytes (rank output) on the agent link without base64 or JSON
// escaping, which cost more CPU than everything else on the log path together.
//
// Layout: a u32 (big-endian) header length, the header (a JSON message, validated
// against its direction's binary map exactly like a text frame), then the payload.
import {
  decodeFrame,
  type Decoded,
  type MessageSchema,
  type MessageOf,
  type MessageTable,
  type WireMessage,
} from './codec.js';
import { ErrorCode } from './errors.js';

/** Headers are a few ids and offsets; anything longer is not one of ours. */
export const MAX_BINARY_HEADER_BYTES = 4096;
/** The largest payload of one binary frame: one chunk of a rank's output. */
export const MAX_BINARY_PAYLOAD_BYTES = 256 * 1024;

const PREFIX_BYTES = 4;

/**
 * One buffer holding the header and the payload, ready for ws.send. Typed senders (the
 * agent link's sendBinary) take only a header of their table; tests also frame invalid ones.
 */
export function encodeBinaryFrame<H extends WireMessage>(header: H, payload: Uint8Array): Buffer {
  if (payload.length > MAX_BINARY_PAYLOAD_BYTES)
    throw new RangeError(`binary payload of ${payload.length} bytes exceeds ${MAX_BINARY_PAYLOAD_BYTES}`);
  // written straight into the frame: one allocation per frame, on the path of every output chunk
  const json = JSON.stringify(header);
  const headerBytes = Buffer.byteLength(json, 'utf8');
  const frame = Buffer.allocUnsafe(PREFIX_BYTES + headerBytes + payload.length);
  frame.writeUInt32BE(headerBytes, 0);
  frame.write(json, PREFIX_BYTES, 'utf8');
  frame.set(payload, PREFIX_BYTES + headerBytes);
  return frame;
}

export type DecodedBinary<M extends WireMessage = WireMessage> =
  (Decoded<M> & { ok: false }) | (Decoded<M> & { ok: true; payload: Buffer });

/** Splits and validates one binary frame. Never throws; the payload is a view, not a copy. */
export function decodeBinaryFrame<S extends MessageSchema>(
  frame: Buffer,
  messages: MessageTable<S>,
): DecodedBinary<MessageOf<MessageTable<S>>> {
  if (frame.length < PREFIX_BYTES) return bad(`binary frame of ${frame.length} bytes has no header length`);
  const headerBytes = frame.readUInt32BE(0);
  if (headerBytes > MAX_BINARY_HEADER_BYTES)
    return bad(`binary frame header of ${headerBytes} bytes exceeds ${MAX_BINARY_HEADER_BYTES}`);
  if (PREFIX_BYTES + headerBytes > frame.length)
    return bad(`binary frame header of ${headerBytes} bytes runs past the frame's ${frame.length}`);
  const payload = frame.subarray(PREFIX_BYTES + headerBytes);
  if (payload.length > MAX_BINARY_PAYLOAD_BYTES)
    return bad(`binary payload of ${payload.length} bytes exceeds ${MAX_BINARY_PAYLOAD_BYTES}`, ErrorCode.TooLarge);
  const decoded = decodeFrame(frame.toString('utf8', PREFIX_BYTES, PREFIX_BYTES + headerBytes), messages);
  return decoded.ok ? { ...decoded, payload } : decoded;
}

function bad(error: string, code: string = ErrorCode.BadFrame): { ok: false; code: string; error: string } {
  return { ok: false, code, error };
}

/**
 * The bytes of a received WebSocket message as one Buffer. ws hands a Buffer with its
 * default binaryType, so on the path of every frame this is one check and no copy.
 */
export function frameBytes(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}
