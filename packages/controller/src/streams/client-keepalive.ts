// The client end of the controller's long-lived WebSockets (shells, a job's stdin): each
// socket is pinged every interval, and one that did not answer the previous ping is cut,
// so a client that vanished without a close (a dead laptop, a dropped route) frees its
// session instead of holding it for ever.
import type { WebSocket } from 'ws';

export class ClientKeepalive {
  private readonly sockets = new Set<WebSocket>();
  private readonly alive = new WeakSet<WebSocket>();
  private readonly timer: NodeJS.Timeout;

  constructor(intervalMs: number) {
    this.timer = setInterval(() => this.sweep(), intervalMs);
    this.timer.unref();
  }

  /** Watches `ws` until it closes. */
  watch(ws: WebSocket): void {
    this.sockets.add(ws);
    this.alive.add(ws);
    ws.on('pong', () => this.alive.add(ws));
    ws.once('close', () => this.sockets.delete(ws));
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sweep(): void {
    for (const ws of this.sockets) {
      if (!this.alive.has(ws)) {
        ws.terminate();
        continue;
      }
      this.alive.delete(ws);
      ws.ping();
    }
  }
}
