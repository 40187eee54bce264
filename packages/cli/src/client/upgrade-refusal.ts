// What the controller said when it refused a WebSocket upgrade (shell, stdin): its error
// body, `{code, message}` as every REST error, read to the end and put in one line.
import type { IncomingMessage } from 'node:http';

/** Calls `done` with "message (CODE)", or the body as it came when it is not JSON. */
export function readUpgradeRefusal(res: IncomingMessage, done: (message: string, status: number) => void): void {
  let body = '';
  res.on('data', (d: Buffer) => (body += d.toString()));
  res.on('end', () => {
    let message = body;
    try {
      const parsed = JSON.parse(body) as { code?: string; message?: string };
      message = parsed.code ? `${parsed.message} (${parsed.code})` : (parsed.message ?? body);
    } catch {
      // not JSON: keep the text
    }
    done(message, res.statusCode ?? 0);
  });
}
