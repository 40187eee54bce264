// Binary frames: bulk bytes (rank output) on the agent link without base64 or JSON
// escaping, which cost more CPU than everything else on the log path together.
//
// Layout: a u32 (big-endian) header length, the header (a JSON message, validated
// against its direction's binary map exactly like a text frame), then the payload.
import { decodeFrame, type Decoded, type MessageMap } from './codec.js';
import { ErrorCode } from './errors.js';

/** Headers are a few ids and offsets; anything longer is not one of ours. */
export const MAX_BINARY_HEADER_BYTES = 4096;
/** The largest payload of one binary frame: one chunk of a rank's output. */
export const MAX_BINARY_PAYLOAD_BYTES = 256 * 1024;

const PREFIX_BYTES = 4;

/** One buffer holding the header and the payload, ready for ws.send. */
export function encodeBinaryFrame(header: { type: string } & Record<string, unknown>, payload: Uint8Array): Buffer {
  if (payload.length > MAX_BINARY_PAYLOAD_BYTES) throw new RangeError(`binary payload of ${payload.length} bytes exceeds ${MAX_BINARY_PAYLOAD_BYTES}`);
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const frame = Buffer.allocUnsafe(PREFIX_BYTES + json.length + payload.length);
  frame.writeUInt32BE(json.length, 0);
  json.copy(frame, PREFIX_BYTES);
  frame.set(payload, PREFIX_BYTES + json.length);
  return frame;
}

export type DecodedBinary = (Decoded & { ok: false }) | (Decoded & { ok: true; payload: Buffer });

/** Splits and validates one binary frame. Never throws; the payload is a view, not a copy. */
export function decodeBinaryFrame(frame: Buffer, messages: MessageMap): DecodedBinary {
  if (frame.length < PREFIX_BYTES) return bad(`binary frame of ${frame.length} bytes has no header length`);
  const headerBytes = frame.readUInt32BE(0);
  if (headerBytes > MAX_BINARY_HEADER_BYTES) return bad(`binary frame header of ${headerBytes} bytes exceeds ${MAX_BINARY_HEADER_BYTES}`);
  if (PREFIX_BYTES + headerBytes > frame.length) return bad(`binary frame header of ${headerBytes} bytes runs past the frame's ${frame.length}`);
  const payload = frame.subarray(PREFIX_BYTES + headerBytes);
  if (payload.length > MAX_BINARY_PAYLOAD_BYTES) return bad(`binary payload of ${payload.length} bytes exceeds ${MAX_BINARY_PAYLOAD_BYTES}`, ErrorCode.TooLarge);
  const decoded = decodeFrame(frame.toString('utf8', PREFIX_BYTES, PREFIX_BYTES + headerBytes), messages);
  return decoded.ok ? { ...decoded, payload } : decoded;
}

function bad(error: string, code: string = ErrorCode.BadFrame): DecodedBinary {
  return { ok: false, code, error };
}
