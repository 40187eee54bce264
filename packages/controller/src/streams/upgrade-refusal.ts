// A WebSocket upgrade refused before any WebSocket exists: a plain HTTP answer with the
// error body every REST route answers ({statusCode, code, error, message}), then the
// socket closed. Shared by the shell and stdin relays.
import type { Duplex } from 'node:stream';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
};

export function refuse(socket: Duplex, status: number, code: string, message: string, retryAfter?: number): void {
  const reason = REASONS[status] ?? 'Error';
  const body = JSON.stringify({ statusCode: status, code, error: reason, message });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${retryAfter === undefined ? '' : `Retry-After: ${retryAfter}\r\n`}Connection: close\r\n\r\n${body}`,
  );
}
