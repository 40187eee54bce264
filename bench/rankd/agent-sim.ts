// Simulated agents for the `scale` figure: many WebSocket connections from one
// process, each speaking the real session protocol — join token and rankd.v1 in the
// upgrade, a hello with this machine's facts, then heartbeats at the interval the
// controller's welcome chose (with the controller's pings answered by ws itself).
//
//   node bench/dist/rankd/agent-sim.js URL TOKEN_FILE COUNT PREFIX
// prints "ready N" once every connection got its welcome, then runs until SIGTERM.
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { readFacts } from '@rankd/agent/facts/index';
import { MAX_FRAME_BYTES, SUBPROTOCOL } from '@rankd/protocol/wire';

const [url, tokenFile, countText, prefix] = process.argv.slice(2);
if (!url || !tokenFile || !countText || !prefix) {
  process.stderr.write('usage: agent-sim URL TOKEN_FILE COUNT PREFIX\n');
  process.exit(64);
}
const token = readFileSync(tokenFile, 'utf8').trim();
const count = Number(countText);
// one facts snapshot, sent by every simulated node: the controller stores it per node
const facts = readFacts({ root: '/' });
const wsUrl = url.replace(/^http/, 'ws') + '/v1/agent';
const sockets: WebSocket[] = [];
const timers: NodeJS.Timeout[] = [];
let welcomed = 0;

function connect(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, [SUBPROTOCOL], { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false, maxPayload: MAX_FRAME_BYTES });
    sockets.push(ws);
    let seq = 0;
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', name: `${prefix}-${i}`, version: 'sim', capabilities: ['facts'], labels: { sim: 'true' }, facts })));
    ws.on('message', (data: Buffer) => {
      const msg = JSON.parse(data.toString()) as { type: string; heartbeatMs?: number };
      if (msg.type !== 'welcome') return;
      welcomed++;
      // spread the beats over the interval, as independent agents would be
      const start = setTimeout(() => {
        timers.push(setInterval(() => ws.send(JSON.stringify({ type: 'heartbeat', seq: seq++ })), msg.heartbeatMs!));
      }, Math.random() * msg.heartbeatMs!);
      timers.push(start);
      resolve();
    });
    ws.on('error', reject);
    ws.on('close', (code) => {
      if (code !== 1000) process.stderr.write(`sim ${prefix}-${i}: closed ${code}\n`);
    });
  });
}

// a bounded number of handshakes in flight: a real fleet does not arrive in one packet either
const CONCURRENCY = 50;
let next = 0;
await Promise.all(
  Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
    while (next < count) await connect(next++);
  }),
);
process.stdout.write(`ready ${welcomed}\n`);
process.on('SIGTERM', () => {
  for (const t of timers) clearTimeout(t);
  for (const ws of sockets) ws.close(1000);
  setTimeout(() => process.exit(0), 500).unref();
});
