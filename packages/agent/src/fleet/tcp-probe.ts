// TCP probes for the doctor's connection matrix. A listener echoes whatever it reads on
// the address ranks will use, for a limited time; a prober connects to each peer, times
// the handshake, then times a few 8-byte echoes and keeps the median.
import net from 'node:net';
import type { ProbeOutcome, ProbeTarget } from '@rankd/protocol';

const ECHOES = 3;
const PAYLOAD = Buffer.from('rankdprb');
/** Peers probed at once: enough to finish a 256-node row fast, few enough for any ulimit -n. */
const CONCURRENCY = 64;

/** Listens on `address` (port chosen by the kernel) until `ttlMs` passes; resolves with the port. */
export function listenForProbes(address: string, ttlMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('data', (d) => socket.write(d));
      socket.on('error', () => socket.destroy());
      socket.on('close', () => sockets.delete(socket));
    });
    server.once('error', reject);
    server.listen({ host: address, port: 0, exclusive: true }, () => {
      const port = (server.address() as net.AddressInfo).port;
      setTimeout(() => {
        server.close();
        for (const s of sockets) s.destroy();
      }, ttlMs).unref();
      resolve(port);
    });
  });
}

export async function probeTargets(targets: readonly ProbeTarget[], timeoutMs: number): Promise<ProbeOutcome[]> {
  const out: ProbeOutcome[] = new Array(targets.length);
  let next = 0;
  const worker = async () => {
    while (next < targets.length) {
      const i = next++;
      out[i] = await probeOne(targets[i]!, timeoutMs);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, targets.length) }, worker));
  return out;
}

function probeOne(t: ProbeTarget, timeoutMs: number): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    let connectMs: number | null = null;
    const rtts: number[] = [];
    let sentAt = 0;
    let pending = Buffer.alloc(0);
    let done = false;
    const socket = net.connect({ host: t.address, port: t.port });
    const finish = (error: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      rtts.sort((a, b) => a - b);
      const rttMs = rtts.length > 0 ? round(rtts[Math.floor(rtts.length / 2)]!) : null;
      resolve({
        node: t.node,
        ok: error === null,
        connectMs: connectMs === null ? null : round(connectMs),
        rttMs,
        error,
      });
    };
    const timer = setTimeout(() => finish(`no answer from ${t.address}:${t.port} within ${timeoutMs} ms`), timeoutMs);
    const ping = () => {
      sentAt = performance.now();
      socket.write(PAYLOAD);
    };
    socket.setNoDelay(true);
    socket.once('connect', () => {
      connectMs = performance.now() - started;
      ping();
    });
    socket.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= PAYLOAD.length) {
        pending = pending.subarray(PAYLOAD.length);
        rtts.push(performance.now() - sentAt);
        if (rtts.length >= ECHOES) return finish(null);
        ping();
      }
    });
    socket.once('error', (err: NodeJS.ErrnoException) => finish(`${t.address}:${t.port}: ${err.code ?? err.message}`));
    socket.once('close', () =>
      finish(rtts.length >= ECHOES ? null : `${t.address}:${t.port}: connection closed after ${rtts.length} echo(es)`),
    );
  });
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
