// Failed authentication is rate-limited per source address: a bounded loop of bad tokens
// gets 429 with Retry-After, on REST and on the shell WebSocket alike, while requests with
// a valid token from the same address are never limited; the audit log counts the 401s and 429s
// per source and minute.
import t from 'tap';
import https from 'node:https';
import { randomBytes } from 'node:crypto';
import { runCli, startController } from '../helpers/daemons.js';
import { httpsFetch } from '../helpers/tls.js';

/** The default: 20 failures a minute per source address. */
const LIMIT = 20;

function upgrade(url: string, token: string, ca: string): Promise<{ status: number; retryAfter: string | undefined }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = https.request({
      ca,
      host: u.hostname,
      port: u.port,
      path: '/v1/shell?node=none',
      headers: {
        authorization: `Bearer ${token}`,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        'sec-websocket-protocol': 'rankd.shell.v1',
      },
      timeout: 10_000,
    });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, retryAfter: undefined });
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('a bounded loop of bad tokens gets 429 with Retry-After; valid tokens are never limited', async (t) => {
  const controller = await startController();
  t.teardown(() => controller.stop());

  const statuses: number[] = [];
  let limited: { status: number; body: unknown } | undefined;
  let retryAfter: string | null = null;
  for (let i = 0; i < LIMIT + 10; i++) {
    const res = await httpsFetch(controller.url + '/v1/nodes', {
      headers: { authorization: `Bearer wrong-${i}` },
      ca: controller.ca,
      signal: AbortSignal.timeout(10_000),
    });
    statuses.push(res.status);
    const body = JSON.parse(await res.text()) as unknown;
    if (res.status === 429 && !limited) {
      limited = { status: res.status, body };
      retryAfter = res.headers.get('retry-after');
    }
    // a valid token from the same address between the failures: never limited
    const ok = await controller.api('/v1/nodes');
    t.equal(ok.status, 200, `a valid request after ${i + 1} failures is served`);
  }
  t.same(statuses.slice(0, LIMIT), Array(LIMIT).fill(401), `the first ${LIMIT} failures are 401`);
  t.same(statuses.slice(LIMIT), Array(10).fill(429), 'past the limit every failure is 429');
  t.match(limited?.body, {
    statusCode: 429,
    code: 'RANKD_RATE_LIMITED',
    message: /too many failed authentications from 127\.0\.0\.1; retry in \d+ s/,
  });
  t.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After: ${retryAfter}`);
  const missing = await controller.api('/v1/jobs', { token: null });
  t.equal(missing.status, 429, 'no token at all counts as a failure too');

  const shell = await upgrade(controller.url, 'wrong', controller.ca);
  t.equal(shell.status, 429, 'the shell WebSocket is limited by the same counter');
  t.ok(Number(shell.retryAfter) >= 1, 'with Retry-After');

  // many successful requests: the log-throughput bench makes thousands
  const many = await Promise.all(Array.from({ length: 200 }, () => controller.api('/v1/nodes')));
  t.same([...new Set(many.map((r) => r.status))], [200], '200 valid requests in a burst are all served');

  const audit = await runCli(['audit', '--json'], { ...controller.clientEnv, RANKD_HOME: controller.dataDir });
  t.equal(audit.code, 0, audit.stderr);
  const { entries } = JSON.parse(audit.stdout) as {
    entries: Array<{
      status: number;
      route: string;
      method: string;
      decision: string;
      reason: string;
      user: string | null;
      source: string;
      count: number;
    }>;
  };
  // refusals are counted per source and minute: one entry each for 401 and 429 (two if the
  // loop crossed a minute), whose counts add up to every refusal
  const sum = (es: typeof entries) => es.reduce((n, e) => n + e.count, 0);
  const rest401 = entries.filter((e) => e.status === 401);
  t.equal(sum(rest401), LIMIT, 'every 401 is counted in the audit log');
  t.ok(rest401.length >= 1 && rest401.length <= 2, `in one entry a minute (${rest401.length})`);
  t.match(rest401[0], {
    decision: 'deny',
    user: null,
    source: '127.0.0.1',
    method: 'GET',
    route: '/v1/nodes',
    reason: /^RANKD_UNAUTHORIZED: missing, wrong or revoked API token/,
  });
  const refused429 = entries.filter((e) => e.status === 429);
  t.equal(sum(refused429), 12, 'every 429 is counted: 10 on /v1/nodes, no token on /v1/jobs, the shell');
  t.ok(refused429.length >= 1 && refused429.length <= 2, `in one entry a minute (${refused429.length})`);
  t.match(refused429[0], {
    decision: 'deny',
    user: null,
    source: '127.0.0.1',
    reason: /^RANKD_RATE_LIMITED: too many failed authentications/,
  });
  t.ok(
    refused429.some((e) => e.route === '(several)'),
    'the entry says it counts refusals of several routes (REST and the shell)',
  );
});
