// A hostile client for test/security/unauth-flood.test.ts, run as its own process so that its
// work never shares the event loop that measures /healthz. Every loop is bounded in count and
// time, and every connection goes to the loopback controller under test, from `source` (an
// address of 127.0.0.0/8, which is all this machine's own).
//
//   node flood-client.mjs '{"mode":"nested"|"badtoken"|"idle"|"handshake"|"probe", "url", "ca", "source", ...}'
//
// "probe" is the measuring side, in a process of its own too: no flood's work, and none of
// the test runner's, stands between it and its timings.
//
// Prints one JSON summary line on stdout when done.
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';

const opts = JSON.parse(process.argv[2]);
const { url, ca, source } = opts;
const u = new URL(url);
const port = Number(u.port);

function request(agent, { method, path, headers = {}, body }) {
  return new Promise((resolve) => {
    const req = https.request({
      agent,
      host: u.hostname,
      port,
      method,
      path,
      headers: {
        ...headers,
        ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
      },
      timeout: 20_000,
    });
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => {
        let code = null;
        try {
          code = JSON.parse(Buffer.concat(chunks).toString()).code ?? null;
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode, code, cookie: res.headers['set-cookie'] !== undefined });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ status: 0, code: err.code ?? err.message, cookie: false }));
    req.end(body);
  });
}

/** `workers` loops sending requests until `max` were sent or `durationMs` passed; tallies status and code. */
async function loop(make) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: opts.workers, ca, localAddress: source });
  const deadline = Date.now() + opts.durationMs;
  const tally = {};
  let sent = 0;
  let cookies = 0;
  await Promise.all(
    Array.from({ length: opts.workers }, async () => {
      while (sent < opts.max && Date.now() < deadline) {
        const i = sent++;
        const r = await request(agent, make(i));
        const k = `${r.status} ${r.code}`;
        tally[k] = (tally[k] ?? 0) + 1;
        if (r.cookie) cookies++;
      }
    }),
  );
  agent.destroy();
  return { sent, tally, cookies };
}

const nested = (bytes) => '['.repeat(bytes / 2) + ']'.repeat(bytes / 2);

async function nestedFlood() {
  const big = nested(1024 * 1024);
  // under the 4 KiB limit of POST /v1/session: the depth check must refuse it
  const deep = nested(3000);
  return loop((i) => ({ method: 'POST', path: '/v1/session', body: i % 2 === 0 ? big : deep }));
}

async function badTokenFlood() {
  return loop((i) => ({ method: 'GET', path: '/v1/nodes', headers: { authorization: `Bearer rankd_wrong-${i}` } }));
}

/** Opens `tcp` bare TCP connections and `tlsIdle` finished TLS handshakes that never send a request; reports when each closed. */
async function idleFlood() {
  const opened = [];
  const watch = (socket, kind) =>
    new Promise((resolve) => {
      const start = Date.now();
      let handshook = false;
      socket.on('secureConnect', () => (handshook = true));
      socket.on('error', () => {});
      socket.on('close', () => resolve({ kind, handshook, closedAfterMs: Date.now() - start }));
      // held (not unref'd) so that the process waits for every connection's end or this bound
      const bound = setTimeout(() => {
        socket.destroy();
        resolve({ kind, handshook, closedAfterMs: null });
      }, opts.holdMs);
      socket.on('close', () => clearTimeout(bound));
    });
  const tcp = (n) => {
    for (let i = 0; i < n; i++)
      opened.push(watch(net.connect({ host: u.hostname, port, localAddress: source }), 'tcp'));
  };
  tcp(opts.tcp);
  for (let i = 0; i < opts.tlsIdle; i++) {
    const s = tls.connect({
      host: u.hostname,
      port,
      localAddress: source,
      ca,
      servername: 'localhost',
      checkServerIdentity: () => undefined,
    });
    opened.push(watch(s, 'tls'));
    await new Promise((r) => {
      s.once('secureConnect', r);
      s.once('close', r);
    });
  }
  // slow headers: a request begun, then one header byte every 500 ms, never finished
  for (let i = 0; i < (opts.slowHeaders ?? 0); i++) {
    const s = tls.connect({
      host: u.hostname,
      port,
      localAddress: source,
      ca,
      servername: 'localhost',
      checkServerIdentity: () => undefined,
    });
    opened.push(watch(s, 'slow-headers'));
    s.once('secureConnect', () => {
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
      const drip = setInterval(() => (s.writable ? s.write('a') : clearInterval(drip)), 500);
      s.once('close', () => clearInterval(drip));
    });
  }
  tcp(opts.tcpAfter);
  const results = await Promise.all(opened);
  return { results };
}

/** `workers` loops that each finish a TLS handshake and close at once, until `max` or `durationMs`. */
async function handshakeFlood() {
  const deadline = Date.now() + opts.durationMs;
  let started = 0;
  const tally = {};
  await Promise.all(
    Array.from({ length: opts.workers }, async () => {
      while (started < opts.max && Date.now() < deadline) {
        started++;
        const outcome = await new Promise((resolve) => {
          const s = tls.connect({
            host: u.hostname,
            port,
            localAddress: source,
            ca,
            servername: 'localhost',
            checkServerIdentity: () => undefined,
          });
          s.once('secureConnect', () => {
            s.destroy();
            resolve('handshake');
          });
          s.once('error', (err) => resolve(err.code ?? 'error'));
          s.once('close', () => resolve('closed before the handshake'));
        });
        tally[outcome] = (tally[outcome] ?? 0) + 1;
      }
    }),
  );
  return { sent: started, tally };
}

/** Not a flood: times GET /healthz every 20 ms over one kept-alive connection until stdin closes (or `maxMs`). */
async function probe() {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca, localAddress: source });
  const samples = [];
  let running = true;
  process.stdin.resume();
  process.stdin.once('end', () => (running = false));
  const stopAt = Date.now() + opts.maxMs;
  while (running && Date.now() < stopAt) {
    const started = performance.now();
    const r = await request(agent, { method: 'GET', path: '/healthz' });
    if (r.status !== 200) throw new Error(`/healthz answered ${r.status} ${r.code}`);
    samples.push(performance.now() - started);
    await new Promise((res) => setTimeout(res, 20));
  }
  agent.destroy();
  process.stdin.destroy();
  return { samples };
}

const run = { nested: nestedFlood, badtoken: badTokenFlood, idle: idleFlood, handshake: handshakeFlood, probe }[
  opts.mode
];
const summary = await run();
process.stdout.write(JSON.stringify(summary) + '\n');
