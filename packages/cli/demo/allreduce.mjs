#!/usr/bin/env node
// The demo job of `rankd up --demo` (npm start): every rank integrates its slice of
// 4/(1+x²) over [0,1] and the ranks allreduce their partial sums over TCP into π.
// It finds its peers the way torch.distributed does: RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT from the planner's environment. Rank 0 gathers and broadcasts.
import { readFileSync } from 'node:fs';
import net from 'node:net';

const rank = Number(process.env.RANK);
const world = Number(process.env.WORLD_SIZE);
const addr = process.env.MASTER_ADDR;
const port = Number(process.env.MASTER_PORT);
if (!Number.isInteger(rank) || !Number.isInteger(world) || !addr || !port) {
  console.error('allreduce: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT must be set (rankd run sets them)');
  process.exit(2);
}

const status = readFileSync('/proc/self/status', 'utf8');
const field = (name) => (status.match(new RegExp(`^${name}:\\s*(.*)$`, 'm')) ?? [])[1] ?? '?';
console.log(
  `rank ${rank}/${world} pid ${process.pid} on CPUs ${field('Cpus_allowed_list')}, memory nodes ${field('Mems_allowed_list')}`,
);

const intervals = 20_000_000;
const started = process.hrtime.bigint();
let partial = 0;
for (let i = rank; i < intervals; i += world) {
  const x = (i + 0.5) / intervals;
  partial += 4 / (1 + x * x);
}
partial /= intervals;
const ms = Number(process.hrtime.bigint() - started) / 1e6;
console.log(`rank ${rank}: partial sum ${partial.toFixed(12)} in ${ms.toFixed(0)} ms`);

const total = rank === 0 ? await gather(partial) : await contribute(partial);
console.log(`rank ${rank}: allreduce → π ≈ ${total.toFixed(12)} (error ${Math.abs(total - Math.PI).toExponential(2)})`);

/** Rank 0: accept world-1 peers, sum, send the sum back to each. */
function gather(mine) {
  return new Promise((resolve, reject) => {
    const peers = [];
    let sum = mine;
    const server = net.createServer((socket) => {
      socket.setEncoding('utf8');
      let buf = '';
      socket.on('data', (d) => {
        buf += d;
        if (!buf.endsWith('\n')) return;
        sum += Number(JSON.parse(buf).partial);
        peers.push(socket);
        if (peers.length === world - 1) {
          for (const p of peers) p.end(JSON.stringify({ sum }) + '\n');
          server.close();
          resolve(sum);
        }
      });
    });
    server.on('error', reject);
    if (world === 1) return resolve(mine);
    server.listen(port, addr);
  });
}

/** Other ranks: connect to rank 0 (retrying while it starts), send, wait for the sum. */
async function contribute(mine) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await new Promise((resolve, reject) => {
        const socket = net.connect(port, addr, () => socket.write(JSON.stringify({ rank, partial: mine }) + '\n'));
        let buf = '';
        socket.setEncoding('utf8');
        socket.on('data', (d) => (buf += d));
        socket.on('end', () => resolve(Number(JSON.parse(buf).sum)));
        socket.on('error', reject);
      });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
