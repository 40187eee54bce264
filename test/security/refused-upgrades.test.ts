// Refused agent upgrades and plain HTTP on the TLS port are audited as counts (issue 24,
// "bad input gets a clear error with a stable code and an audit line"; "refusals are
// aggregated in the audit log: one line per source and minute, with a count").
//
// Hostile clients, each from its own loopback address and bounded in count: WebSocket
// upgrades on /v1/agent with no certificate, with the certificate of a node that was enrolled
// and then removed (`rankd node remove`), and plain HTTP requests on the TLS port. Each is
// refused with its stable code; the agent of another node stays ready and never reconnects;
// the audit log holds a few entries per source whose counts add up to the refusals, in the
// store (GET /v1/audit, `rankd audit --json`) and, once the controller stops, in audit.jsonl.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import WebSocket from 'ws';
import { runCli, startAgent, startController, waitForNode, type ControllerHandle } from '../helpers/daemons.js';
import { enrollIdentity, gatewayUrl } from '../helpers/tls.js';

// every address of 127.0.0.0/8 is this machine's own: each plays another host
const NO_CERT_SOURCE = '127.0.0.11';
const REVOKED_SOURCE = '127.0.0.12';
const PLAINTEXT_SOURCE = '127.0.0.13';
const ATTEMPTS = 120;
/** Attempts in flight at once: well under the per-source connection cap. */
const PARALLEL = 8;
const ATTEMPT_TIMEOUT_MS = 10_000;

interface Refusal {
  status: number;
  code: string;
}

interface AuditRow {
  source: string;
  user: string | null;
  role: string | null;
  status: number | null;
  method: string;
  route: string;
  reason: string;
  decision: string;
  count: number;
}

/** A WebSocket upgrade on /v1/agent, as an agent opens it; resolves with the refusal it earns (an upgrade is a failure here). */
function agentUpgrade(
  controller: ControllerHandle,
  source: string,
  identity?: { cert: string; key: string },
): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const req = https.request(controller.url + '/v1/agent', {
      ca: controller.ca,
      ...(identity ?? {}),
      localAddress: source,
      agent: false,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        'sec-websocket-protocol': 'rankd.v1',
      },
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    });
    req.once('error', reject);
    req.once('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error('the upgrade was accepted'));
    });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.once('end', () =>
        resolve({ status: res.statusCode ?? 0, code: (JSON.parse(body) as { code: string }).code }),
      );
    });
    req.end();
  });
}

/** A plain-HTTP request on the TLS port; resolves with the answer's status and code. */
function plainHttp(controller: ControllerHandle, source: string): Promise<Refusal> {
  const { hostname, port } = new URL(controller.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), localAddress: source });
    socket.setTimeout(ATTEMPT_TIMEOUT_MS, () => socket.destroy(new Error('no answer in time')));
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.once('error', reject);
    socket.once('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
      const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
      try {
        resolve({ status, code: (JSON.parse(body) as { code: string }).code });
      } catch {
        reject(new Error(`not a JSON answer: ${JSON.stringify(answer.slice(0, 200))}`));
      }
    });
    socket.write(`GET /v1/nodes HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`);
  });
}

/** Runs `attempt` ATTEMPTS times, PARALLEL at once; tallies the answers as "STATUS CODE". */
async function flood(attempt: () => Promise<Refusal>): Promise<Record<string, number>> {
  const tally: Record<string, number> = {};
  let next = 0;
  const worker = async () => {
    while (next < ATTEMPTS) {
      next++;
      const { status, code } = await attempt();
      tally[`${status} ${code}`] = (tally[`${status} ${code}`] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  return tally;
}

const sum = (rows: AuditRow[]): number => rows.reduce((n, r) => n + r.count, 0);

t.test(
  'refused agent upgrades and plain HTTP are refused with their codes and counted, not written one by one',
  async (t) => {
    const controller = await startController();
    let stopped = false;
    t.teardown(() => (stopped ? undefined : controller.stop()));
    const agent = startAgent(controller, { name: 'steady' });
    t.teardown(() => agent.stop());
    await waitForNode(controller, 'steady', 'ready', 30_000);

    // a node that was enrolled and linked, then removed: its certificate is still signed by the CA and in date
    const gone = await enrollIdentity(controller, 'gone');
    const link = new WebSocket(gatewayUrl(controller.url), ['rankd.v1'], {
      ca: gone.ca,
      cert: gone.cert,
      key: gone.key,
    });
    const linkClosed = new Promise<number>((resolve) => link.once('close', resolve));
    link.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      link.once('open', resolve);
      link.once('unexpected-response', () =>
        reject(new Error("the node's certificate was refused before its removal")),
      );
    });
    const removed = await runCli(['node', 'remove', 'gone'], controller.clientEnv);
    t.equal(removed.code, 0, `rankd node remove gone: ${removed.stderr}`);
    t.equal(await linkClosed, 4401, "the removed node's link was closed as revoked");

    const audit = async (source: string): Promise<AuditRow[]> => {
      const r = await controller.api<{ entries: AuditRow[] }>('/v1/audit?limit=10000');
      t.equal(r.status, 200);
      return r.body.entries.filter((e) => e.source === source);
    };

    await t.test('upgrades with no certificate', async (t) => {
      const tally = await flood(() => agentUpgrade(controller, NO_CERT_SOURCE));
      t.same(
        tally,
        { '401 RANKD_NODE_CERT_REQUIRED': ATTEMPTS },
        `each of ${ATTEMPTS} is refused with 401 RANKD_NODE_CERT_REQUIRED`,
      );
      const rows = await audit(NO_CERT_SOURCE);
      t.equal(sum(rows), ATTEMPTS, 'every refusal is counted in the audit log');
      t.ok(
        rows.length >= 1 && rows.length <= 2,
        `in one entry per minute (${rows.length} entries for ${ATTEMPTS} refusals)`,
      );
      t.match(rows[0], {
        user: null,
        role: null,
        status: 401,
        method: 'GET',
        route: '/v1/agent',
        decision: 'deny',
        reason: /^RANKD_NODE_CERT_REQUIRED: /,
      });
    });

    await t.test("upgrades with a removed node's certificate", async (t) => {
      const tally = await flood(() => agentUpgrade(controller, REVOKED_SOURCE, gone));
      t.same(
        tally,
        { '401 RANKD_NODE_CERT_REVOKED': ATTEMPTS },
        `each of ${ATTEMPTS} is refused with 401 RANKD_NODE_CERT_REVOKED`,
      );
      const rows = await audit(REVOKED_SOURCE);
      t.equal(sum(rows), ATTEMPTS, 'every refusal is counted in the audit log');
      t.ok(
        rows.length >= 1 && rows.length <= 2,
        `in one entry per minute (${rows.length} entries for ${ATTEMPTS} refusals)`,
      );
      t.match(
        rows[0],
        { user: 'gone', role: 'node', status: 401, route: '/v1/agent', reason: /^RANKD_NODE_CERT_REVOKED: / },
        'under the name its CA-signed certificate holds',
      );
      const nodes = (await controller.api<{ nodes: Array<{ name: string; connected: boolean }> }>('/v1/nodes')).body
        .nodes;
      t.notOk(
        nodes.some((n) => n.name === 'gone' && n.connected),
        'the removed node got no link back',
      );
    });

    await t.test('plain HTTP on the TLS port', async (t) => {
      const tally = await flood(() => plainHttp(controller, PLAINTEXT_SOURCE));
      t.same(
        tally,
        { '400 RANKD_PLAINTEXT_ON_TLS_PORT': ATTEMPTS },
        `each of ${ATTEMPTS} is answered 400 RANKD_PLAINTEXT_ON_TLS_PORT`,
      );
      const rows = await audit(PLAINTEXT_SOURCE);
      t.equal(sum(rows), ATTEMPTS, 'every refusal is counted in the audit log');
      t.ok(
        rows.length >= 1 && rows.length <= 2,
        `in one entry per minute (${rows.length} entries for ${ATTEMPTS} refusals)`,
      );
      t.match(rows[0], { user: null, status: 400, route: '(plain HTTP)', reason: /^RANKD_PLAINTEXT_ON_TLS_PORT: / });
    });

    // `rankd audit --json` shows the same counts
    const cli = await runCli(['audit', '--json'], controller.clientEnv);
    t.equal(cli.code, 0, cli.stderr);
    const { entries } = JSON.parse(cli.stdout) as { entries: AuditRow[] };
    for (const source of [NO_CERT_SOURCE, REVOKED_SOURCE, PLAINTEXT_SOURCE])
      t.equal(
        sum(entries.filter((e) => e.source === source)),
        ATTEMPTS,
        `rankd audit --json: ${source} counted ${ATTEMPTS} times`,
      );

    // the other node's agent was never disturbed
    t.equal(
      (await controller.api<{ state: string; connected: boolean }>('/v1/nodes/steady')).body.state,
      'ready',
      "the other node's agent stays ready",
    );
    t.equal(agent.output().split('connected to controller').length - 1, 1, 'and never reconnected');

    // once the controller stops, audit.jsonl holds each entry once, with its final count
    await controller.stop();
    stopped = true;
    const lines = readFileSync(join(controller.dataDir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AuditRow);
    for (const source of [NO_CERT_SOURCE, REVOKED_SOURCE, PLAINTEXT_SOURCE]) {
      const mine = lines.filter((l) => l.source === source);
      t.ok(mine.length <= 2, `audit.jsonl: ${mine.length} line(s) from ${source}`);
      t.equal(sum(mine), ATTEMPTS, `audit.jsonl: counts add up to ${ATTEMPTS}`);
    }
  },
);
