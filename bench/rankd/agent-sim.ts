// Simulated agents for the `scale` and `pmi-fence` figures: many WebSocket connections
// from one process, each speaking the real session protocol as an enrolled node — a node
// certificate of its own presented over mTLS and rankd.v1 in the upgrade, a hello with
// this machine's facts, then heartbeats at the interval the controller's welcome chose
// (with the controller's pings answered by ws itself). Each node also plays an agent's
// part in jobs and PMI fences (sim-jobs.ts) on commands.
//
//   SIM_JOIN_TOKEN=T node bench/dist/rankd/agent-sim.js URL CA_HASH COUNT PREFIX
// First every node name PREFIX-i is enrolled as `rankd agent` does it: the controller's CA
// fetched once and checked against CA_HASH (the pin), then per name a new ECDSA P-256 key
// and CSR (keyAndCsr, the agent's link/csr.ts) and POST /v1/enroll {token, csr} over a connection
// verified against that CA; the token is one multi-use join token shared by the fleet (off
// the command line). Then it reports {"event":"enrolled",…} and waits for {"cmd":"connect"}
// on stdin, so that no process connects while another still enrolls.
// A connection the controller drops (a controller restart) is reconnected as `rankd agent`
// does it: the agent's own Backoff (250 ms doubling to 30 s, equal jitter), so the handshake
// storm after a restart is the one a real fleet makes.
// Talks JSON lines: events on stdout ("enrolled", {"event":"ready","welcomed":N} once every
// connection got its welcome, {"event":"reconnected","at":T} once every one is welcomed
// again after a loss, then "started" once every node of the process got a job's job.start
// (with the ranks and when the first and last came), "fenced", "pulled", "exited", "error"),
// commands on stdin ("connect", then sim-jobs.ts's Command). Runs until SIGTERM or until
// stdin closes.
// SIM_ROOT=DIR reports the facts read under DIR (a generated topology, a captured machine)
// instead of this machine's; SIM_SLEEP_RANKS=1 makes ranks whose argv is `sleep S` exit 0
// after S seconds and ranks of an aborted job end by SIGTERM, as real ones would (the queue
// tests use both). Ranks of `true`, `false` and `echo …` always end on their own, with
// their output and exit code (sim-jobs.ts), SIM_EXIT_DELAY_MS after their start (default 0:
// at once).
// {"cmd":"lose","node":NAME} takes one node down as a lost machine goes: its link is cut
// without a close frame, it sends nothing more (no heartbeat, no reconnect) and its ranks
// are gone; {"cmd":"revive","node":NAME} brings it back, reconnecting as a restarted agent.
// Every process answers ({"event":"lost"|"revived","node":…,"mine":bool,"at":T}); only the
// one that holds the name acts.
import https from 'node:https';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { keyAndCsr } from '#agent/link/csr';
import { fetchPinnedCa } from '#agent/link/enroll';
import { Backoff } from '#agent/link/backoff';
import { readFacts } from '@rankd/topology';
import { MAX_FRAME_BYTES, SUBPROTOCOL } from '@rankd/protocol/wire';
import { httpsRequest } from './https.js';
import { SimJobs, now, type Command, type SimNode } from './sim-jobs.js';

const [url, caHash, countText, prefix] = process.argv.slice(2);
const joinToken = process.env['SIM_JOIN_TOKEN'];
if (!url || !caHash || !countText || !prefix || !joinToken) {
  process.stderr.write('usage: SIM_JOIN_TOKEN=TOKEN agent-sim URL CA_HASH COUNT PREFIX\n');
  process.exit(64);
}
const count = Number(countText);
// one facts snapshot, sent by every simulated node: the controller stores it per node
const facts = readFacts({ root: process.env['SIM_ROOT'] ?? '/' });
const wsUrl = url.replace(/^https:/, 'wss:') + '/v1/agent';
const sockets = new Set<WebSocket>();
let welcomed = 0;
/** Connections welcomed and still open; `lost` is set once one drops and cleared when all are back. */
let live = 0;
let lost = false;
let stopping = false;
const emit = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);
const exitDelayMs = Number(process.env['SIM_EXIT_DELAY_MS'] ?? 0);
if (!Number.isFinite(exitDelayMs) || exitDelayMs < 0) {
  process.stderr.write(
    `agent-sim: SIM_EXIT_DELAY_MS must be a number of milliseconds ≥ 0, not "${process.env['SIM_EXIT_DELAY_MS']}"\n`,
  );
  process.exit(64);
}
const jobs = new SimJobs(emit, process.env['SIM_SLEEP_RANKS'] === '1', exitDelayMs);
/** Each node's link by name: a figure may take one down (a lost node) and bring it back. */
const links = new Map<string, { lose(): void; revive(): void }>();

interface Identity {
  name: string;
  key: string;
  cert: string;
}

/** Enrollments in flight per process: keys, CSRs and TLS are CPU work on a shared machine. */
const ENROLL_CONCURRENCY = 8;
const ENROLL_TIMEOUT_MS = 60_000;

/** Enrolls PREFIX-0 … PREFIX-(COUNT-1): one CSR per name, one use of the join token each. */
async function enrollAll(ca: string): Promise<Identity[]> {
  // one keep-alive agent verified against the pinned CA: the names share its connections
  const agent = new https.Agent({ keepAlive: true, maxSockets: ENROLL_CONCURRENCY, ca });
  const identities: Identity[] = new Array(count);
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: Math.min(ENROLL_CONCURRENCY, count) }, async () => {
        while (next < count) {
          const i = next++;
          const name = `${prefix}-${i}`;
          const { key, csr } = await keyAndCsr(name);
          const res = await httpsRequest(`${url}/v1/enroll`, {
            ca,
            agent,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ token: joinToken, csr }),
            timeoutMs: ENROLL_TIMEOUT_MS,
          });
          if (res.status !== 200) throw new Error(`enrolling ${name}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
          identities[i] = { name, key, cert: (JSON.parse(res.text) as { certificate: string }).certificate };
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return identities;
}

/**
 * Frames above this are pulled chunks (256 KiB of cards): only their id is read here, from
 * the head the controller writes first, and the bytes go to whoever asked. Parsing them all
 * would be one process doing the JSON work of hundreds of agents.
 */
const PEEK_ABOVE = 64 * 1024;
const CHUNK_HEAD = /^\{"type":"pmi\.chunk","id":"([^"]+)"/;

/**
 * Opens one node's link and resolves at its first welcome. After that the link lives on its
 * own: when it drops it is opened again after the agent's backoff, for as long as this runs.
 */
function connect(ca: string, id: Identity): Promise<void> {
  return new Promise((resolve, reject) => {
    const backoff = new Backoff({ baseMs: 250, capMs: 30_000 });
    let first = true;
    let heartbeat: NodeJS.Timeout | undefined;
    let simNode: SimNode | undefined;
    /** Taken down by the figure: nothing is sent and no reconnect follows until it is revived. */
    let down = false;
    let current: WebSocket | undefined;
    const open = (): void => {
      // mTLS: the node's own certificate, the controller verified against the pinned CA
      const ws = new WebSocket(wsUrl, [SUBPROTOCOL], {
        ca,
        cert: id.cert,
        key: id.key,
        perMessageDeflate: false,
        maxPayload: MAX_FRAME_BYTES,
        handshakeTimeout: 60_000,
      });
      sockets.add(ws);
      current = ws;
      // one simulated node across its links: a reconnect re-points it at the new socket
      if (simNode) simNode.ws = ws;
      else simNode = jobs.addNode(id.name, ws);
      const node = simNode;
      let seq = 0;
      let up = false;
      ws.on('open', () =>
        ws.send(
          JSON.stringify({
            type: 'hello',
            name: node.name,
            version: 'sim',
            capabilities: ['facts'],
            labels: { sim: 'true' },
            facts,
          }),
        ),
      );
      ws.on('message', (data: Buffer) => {
        if (data.length > PEEK_ABOVE) {
          const id = CHUNK_HEAD.exec(data.toString('utf8', 0, 256))?.[1];
          if (id) return jobs.chunk(id, data);
        }
        const msg = JSON.parse(data.toString()) as { type: string; id?: string; heartbeatMs?: number } & Record<
          string,
          unknown
        >;
        switch (msg.type) {
          case 'welcome': {
            up = true;
            backoff.reset();
            live++;
            if (first) welcomed++;
            if (lost && live === count) {
              lost = false;
              emit({ event: 'reconnected', at: now() });
            }
            // spread the beats over the interval, as independent agents would be
            heartbeat = setTimeout(() => {
              heartbeat = setInterval(
                () => ws.send(JSON.stringify({ type: 'heartbeat', seq: seq++ })),
                msg.heartbeatMs,
              );
            }, Math.random() * msg.heartbeatMs!);
            if (first) {
              first = false;
              resolve();
            }
            return;
          }
          case 'job.start':
            return jobs.started(node, msg as unknown as Parameters<SimJobs['started']>[1]);
          case 'job.abort':
            return jobs.aborted(node, msg as unknown as Parameters<SimJobs['aborted']>[1]);
          case 'pmi.fenced':
            return jobs.fenced(node, msg as unknown as Parameters<SimJobs['fenced']>[1]);
          case 'pmi.chunk':
            if (msg.id) jobs.chunk(msg.id, data, typeof msg.error === 'string' ? msg.error : undefined);
            return;
          default:
            return; // job.release, errors: nothing runs here to act on
        }
      });
      ws.on('unexpected-response', (_req, res) => {
        // a refused upgrade: the controller's status and stable code say why
        let body = '';
        res.on('data', (d: Buffer) => (body = (body + d.toString()).slice(0, 1000)));
        res.once('end', () => {
          const err = new Error(`${node.name}: the gateway refused the upgrade: HTTP ${res.statusCode} ${body}`);
          if (first) reject(err);
          else void fail(err);
        });
      });
      ws.on('error', (err) => {
        // before the first welcome an error is the figure's failure; after it, a drop to reconnect from
        if (first) reject(err);
      });
      ws.on('close', () => {
        sockets.delete(ws);
        clearTimeout(heartbeat);
        clearInterval(heartbeat);
        if (stopping || first) return;
        if (up) live--;
        if (down) return;
        if (up) lost = true;
        setTimeout(open, backoff.next());
      });
    };
    links.set(id.name, {
      lose: () => {
        down = true;
        clearTimeout(heartbeat);
        clearInterval(heartbeat);
        // no close frame: the controller hears nothing more, as from a machine that lost power
        current?.terminate();
        jobs.forget(simNode!);
      },
      revive: () => {
        if (!down) return;
        down = false;
        backoff.reset();
        open();
      },
    });
    open();
  });
}

// a bounded number of handshakes in flight: a real fleet does not arrive in one packet either
const CONCURRENCY = 50;

async function connectAll(ca: string, identities: Identity[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, identities.length) }, async () => {
      while (next < identities.length) await connect(ca, identities[next++]!);
    }),
  );
}

let enrolled: { ca: string; identities: Identity[] } | null = null;
let connecting = false;
async function fail(err: unknown): Promise<never> {
  emit({ event: 'error', message: (err as Error).message ?? String(err) });
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
}

function shutdown(): void {
  stopping = true;
  for (const ws of sockets) ws.close(1000);
  setTimeout(() => process.exit(0), 500).unref();
}
process.on('SIGTERM', shutdown);
// the figure is this process's only reader: when it goes, so does the simulator
const commands = createInterface({ input: process.stdin });
commands.on('line', (line) => {
  if (line.trim() === '') return;
  const c = JSON.parse(line) as Command | { cmd: 'connect' };
  if (c.cmd === 'connect') {
    if (!enrolled || connecting)
      return void fail(new Error(enrolled ? 'connect: already connecting' : 'connect before the names were enrolled'));
    connecting = true;
    const { ca, identities } = enrolled;
    connectAll(ca, identities).then(() => emit({ event: 'ready', welcomed }), fail);
    return;
  }
  if (c.cmd === 'lose' || c.cmd === 'revive') {
    const link = links.get(c.node);
    if (c.cmd === 'lose') link?.lose();
    else link?.revive();
    emit({ event: c.cmd === 'lose' ? 'lost' : 'revived', node: c.node, mine: link !== undefined, at: now() });
    return;
  }
  void jobs.command(c);
});
commands.on('close', shutdown);

try {
  // the CA as `rankd agent --ca-hash` gets it: fetched without trust, kept only if its hash is the pin
  const ca = await fetchPinnedCa(url, caHash);
  const start = now();
  const identities = await enrollAll(ca);
  enrolled = { ca, identities };
  emit({ event: 'enrolled', names: identities.length, inFlight: ENROLL_CONCURRENCY, start, end: now() });
} catch (err) {
  await fail(err);
}
