// Revocation is immediate everywhere: revoking a token, removing a user, signing a dashboard
// session out or removing a node ends what that principal holds open — log follows in every
// format, /v1/events, shells (and their programs on the node), agent links — within 1 s of
// the revoking request's answer, each with its documented last word, while everyone else's
// streams go on. Real controller and agent processes, real tokens, loopback only.
import t, { type Test } from 'tap';
import https from 'node:https';
import tls from 'node:tls';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { processAlive } from '../helpers/cluster.js';
import { runCli, spawnDaemon, waitUntil, type ControllerHandle } from '../helpers/daemons.js';
import { enrollIdentity } from '../helpers/tls.js';
import { fleetUnderTest } from '../fleet/helpers.js';

/** The bound, measured from the moment the revoking request was answered. */
const WITHIN_MS = 1000;

interface Stream {
  what: string;
  body: () => string;
  /** When the stream ended, and whether it ended cleanly (its final chunk) or was cut. */
  ended: Promise<{ at: number; clean: boolean }>;
  close(): void;
}

/** A GET that streams: with a bearer token or a dashboard session cookie. */
function openStream(
  c: ControllerHandle,
  what: string,
  path: string,
  auth: { token: string } | { cookie: string },
): Promise<Stream> {
  const u = new URL(c.url);
  return new Promise((resolve, reject) => {
    const headers = 'token' in auth ? { authorization: `Bearer ${auth.token}` } : { cookie: auth.cookie };
    const req = https.request(
      { host: u.hostname, port: u.port, path, method: 'GET', ca: c.ca, headers, agent: false },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`${what}: status ${res.statusCode}`));
          return;
        }
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        const ended = new Promise<{ at: number; clean: boolean }>((done) => {
          res.on('end', () => done({ at: Date.now(), clean: true }));
          res.on('aborted', () => done({ at: Date.now(), clean: false }));
          res.on('error', () => done({ at: Date.now(), clean: false }));
          res.on('close', () => done({ at: Date.now(), clean: res.complete }));
        });
        resolve({ what, body: () => body, ended, close: () => req.destroy() });
      },
    );
    req.on('error', () => undefined);
    req.setTimeout(60_000, () => req.destroy());
    req.end();
  });
}

interface Shell {
  ws: WebSocket;
  events: Array<{ type: string; code?: string; message?: string; pid?: number }>;
  closed: Promise<{ at: number; code: number; reason: string }>;
}

function openShell(c: ControllerHandle, token: string, node: string): Promise<Shell> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(
      `${c.url.replace(/^https/, 'wss')}/v1/shell?node=${node}&arg=sh&arg=-c&arg=${encodeURIComponent('exec sleep 600')}`,
      ['rankd.shell.v1'],
      {
        ca: c.ca,
        headers: { authorization: `Bearer ${token}` },
      },
    );
    const events: Shell['events'] = [];
    const closed = new Promise<{ at: number; code: number; reason: string }>((r) =>
      ws.on('close', (code, reason) => r({ at: Date.now(), code, reason: reason.toString() })),
    );
    ws.on('message', (data: Buffer, isBinary) => {
      if (!isBinary) events.push(JSON.parse(data.toString()) as Shell['events'][number]);
    });
    ws.on('open', () => resolve({ ws, events, closed }));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`shell: status ${res.statusCode}`)));
    ws.on('error', () => undefined);
  });
}

/** A user with a token; `rankd user add` as the admin. */
async function addUser(
  env: NodeJS.ProcessEnv,
  name: string,
  role: string,
): Promise<{ token: string; accessor: string }> {
  const r = await runCli(['user', 'add', name, '--role', role, '--json'], env);
  if (r.code !== 0) throw new Error(`user add ${name}: ${r.stderr}`);
  return JSON.parse(r.stdout) as { token: string; accessor: string };
}

/** A job that writes a line every 100 ms for a minute: a follow of it would last that long. */
async function tickingJob(c: ControllerHandle): Promise<string> {
  const job = await c.api<{ id: string }>('/v1/jobs', {
    method: 'POST',
    body: {
      command: ['sh', '-c', 'i=0; while [ $i -lt 600 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done'],
      placement: { ntasks: 1 },
    },
  });
  if (job.status !== 201) throw new Error(`submit: ${job.status} ${JSON.stringify(job.body)}`);
  await waitUntil('the job ticks', 30_000, async () =>
    /tick 3/.test((await c.api<string>(`/v1/jobs/${job.body.id}/logs`)).body),
  );
  return job.body.id;
}

/** Every follow format, /v1/events, and (with a token) a shell, opened as one principal. */
async function openAll(
  c: ControllerHandle,
  jobId: string,
  auth: { token: string } | { cookie: string },
  node?: string,
) {
  const streams = await Promise.all([
    openStream(c, 'follow (frames)', `/v1/jobs/${jobId}/logs?follow=true&format=frames`, auth),
    openStream(c, 'follow (ndjson)', `/v1/jobs/${jobId}/logs?follow=true&format=ndjson`, auth),
    openStream(c, 'follow (sse)', `/v1/jobs/${jobId}/logs?follow=true&format=sse`, auth),
    openStream(c, 'follow (text)', `/v1/jobs/${jobId}/logs?follow=true&format=text`, auth),
    openStream(c, 'events (sse)', '/v1/events', auth),
  ]);
  const shell = node && 'token' in auth ? await openShell(c, auth.token, node) : null;
  for (const s of streams.slice(0, 4)) await waitUntil(`${s.what} streams`, 10_000, () => /tick/.test(s.body()));
  const pid = shell
    ? (await waitUntil('the shell started', 10_000, () => shell.events.find((e) => e.type === 'started'))).pid!
    : null;
  return { streams, shell, pid };
}

/** Each stream ended within the bound after `answeredAt`, with its format's last word. */
async function assertEnded(
  t: Test,
  opened: { streams: Stream[]; shell: Shell | null; pid: number | null },
  answeredAt: number,
  message: RegExp,
): Promise<void> {
  for (const s of opened.streams) {
    const end = await Promise.race([s.ended, new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
    t.ok(end, `${s.what} ended`);
    if (!end) continue;
    t.ok(
      end.at - answeredAt <= WITHIN_MS,
      `${s.what} ended ${end.at - answeredAt} ms after the answer (bound ${WITHIN_MS} ms)`,
    );
    const body = s.body();
    t.notMatch(body, /"end":\{|event: end/, `${s.what}: no end-of-job record (the job still runs)`);
    if (s.what === 'follow (text)') {
      t.equal(end.clean, false, 'plain text has no room for a last line: the stream is cut, not completed');
      continue;
    }
    const last = s.what.includes('sse')
      ? /event: revoked\ndata: (.*)\n\n$/.exec(body)?.[1]
      : /^\{"revoked":(.*)\}$/.exec(body.trimEnd().split('\n').pop() ?? '')?.[1];
    t.ok(last, `${s.what}: its last ${s.what.includes('sse') ? 'event is "revoked"' : 'line is {"revoked":…}'}`);
    const why = last ? (JSON.parse(last) as { code: string; message: string }) : null;
    t.equal(why?.code, 'RANKD_CREDENTIAL_REVOKED', `${s.what}: RANKD_CREDENTIAL_REVOKED`);
    t.match(why?.message ?? '', message, `${s.what}: it says why`);
  }
  if (opened.shell) {
    const closed = await Promise.race([opened.shell.closed, new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
    t.ok(closed, 'the shell closed');
    if (closed) {
      t.ok(
        closed.at - answeredAt <= WITHIN_MS,
        `the shell closed ${closed.at - answeredAt} ms after the answer (bound ${WITHIN_MS} ms)`,
      );
      t.equal(closed.code, 4401, 'close code 4401');
      t.equal(closed.reason, 'RANKD_CREDENTIAL_REVOKED', 'close reason RANKD_CREDENTIAL_REVOKED');
    }
    const last = opened.shell.events.at(-1);
    t.equal(last?.code, 'RANKD_CREDENTIAL_REVOKED', 'a last error event names the code');
    t.match(last?.message ?? '', message);
    const pid = opened.pid!;
    await waitUntil(`the shell's program (pid ${pid}) ended on the node`, WITHIN_MS, () => !processAlive(pid), 20);
    t.pass(`the shell's program (pid ${pid}) was hung up on the node`);
  }
}

t.test('revoking a token ends its follows, event stream and shell within 1 s; other tokens keep theirs', async (t) => {
  const f = await fleetUnderTest(t, ['rv1']);
  const c = f.controller;
  const jobId = await tickingJob(c);
  const otto = await addUser(f.env, 'otto', 'operator');
  // `rankd logs -f` as otto: it follows until the revocation, then exits 77 with the reason
  const cliFollow = spawnDaemon(['logs', jobId, '-f'], { ...f.env, RANKD_TOKEN: otto.token });
  t.teardown(() => cliFollow.stop('SIGKILL'));
  const opened = await openAll(c, jobId, { token: otto.token }, 'rv1');
  await waitUntil('rankd logs -f follows', 30_000, () => /tick/.test(cliFollow.output()));
  // a bystander: the admin's own follow of the same job
  const admin = await openStream(c, 'the admin follow', `/v1/jobs/${jobId}/logs?follow=true&format=ndjson`, {
    token: c.apiToken,
  });

  const revoked = await c.api(`/v1/tokens/${otto.accessor}`, { method: 'DELETE' });
  const answeredAt = Date.now();
  t.equal(revoked.status, 204);
  await assertEnded(t, opened, answeredAt, /its API token [0-9a-f]{16} was revoked/);

  t.equal((await c.api('/v1/whoami', { token: otto.token })).status, 401, 'the revoked token is refused');
  const follow = await Promise.race([cliFollow.exited, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
  t.equal(follow?.code, 77, 'rankd logs -f exits 77');
  t.match(
    cliFollow.output(),
    /the controller ended this log stream: ended: its API token [0-9a-f]{16} was revoked \(RANKD_CREDENTIAL_REVOKED\)/,
    'and says why',
  );
  const before = admin.body().length;
  await waitUntil("the admin's follow goes on", 5000, () => admin.body().length > before);
  t.equal((await c.api<{ state: string }>(`/v1/jobs/${jobId}`)).body.state, 'running', 'the job itself runs on');
  admin.close();

  const audit = await c.api<{
    entries: Array<{ route: string; accessor: string | null; reason: string; status: number | null }>;
  }>('/v1/audit?limit=1000');
  const shellEntry = audit.body.entries.find((e) => e.route === '/v1/shell' && e.accessor === otto.accessor);
  t.match(
    shellEntry?.reason,
    /shell session: RANKD_CREDENTIAL_REVOKED: ended: its API token [0-9a-f]{16} was revoked/,
    "the shell's audit entry says how it ended",
  );
  await c.api(`/v1/jobs/${jobId}/cancel`, { method: 'POST', body: {} });
});

t.test('removing a user ends every stream and shell of every one of its tokens within 1 s', async (t) => {
  const f = await fleetUnderTest(t, ['rv2']);
  const c = f.controller;
  const jobId = await tickingJob(c);
  const olga = await addUser(f.env, 'olga', 'operator');
  const second = await c.api<{ token: string }>('/v1/tokens', {
    method: 'POST',
    body: { description: 'second' },
    token: olga.token,
  });
  t.equal(second.status, 201);
  const first = await openAll(c, jobId, { token: olga.token }, 'rv2');
  const other = await openStream(
    c,
    'follow with her second token',
    `/v1/jobs/${jobId}/logs?follow=true&format=ndjson`,
    { token: second.body.token },
  );
  await waitUntil('the second follow streams', 10_000, () => /tick/.test(other.body()));

  const removed = await runCli(['user', 'remove', 'olga'], f.env);
  const answeredAt = Date.now();
  t.equal(removed.code, 0, removed.stderr);
  // the CLI's own exit comes after the answer, so this bound is looser than the real one
  await assertEnded(t, { ...first, streams: [...first.streams, other] }, answeredAt, /its user "olga" was removed/);
  await c.api(`/v1/jobs/${jobId}/cancel`, { method: 'POST', body: {} });
});

t.test("a dashboard session's streams end when it signs out, and when the token behind it is revoked", async (t) => {
  const f = await fleetUnderTest(t, ['rv3']);
  const c = f.controller;
  const jobId = await tickingJob(c);
  const rita = await addUser(f.env, 'rita', 'reader');
  const signIn = async (): Promise<{ cookie: string; csrf: string }> => {
    const u = new URL(c.url);
    return new Promise((resolve, reject) => {
      const body = JSON.stringify({ token: rita.token });
      const req = https.request(
        {
          host: u.hostname,
          port: u.port,
          path: '/v1/session',
          method: 'POST',
          ca: c.ca,
          agent: false,
          headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => {
            const cookie = (res.headers['set-cookie'] ?? [])
              .map((s) => s.split(';')[0])
              .find((s) => s?.startsWith('rankd_session='));
            if (res.statusCode !== 201 || !cookie) return reject(new Error(`sign-in: ${res.statusCode} ${text}`));
            resolve({ cookie, csrf: (JSON.parse(text) as { csrf: string }).csrf });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  };
  const request = (path: string, method: string, headers: Record<string, string>): Promise<number> => {
    const u = new URL(c.url);
    return new Promise((resolve, reject) => {
      const req = https.request(
        { host: u.hostname, port: u.port, path, method, ca: c.ca, agent: false, headers },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end();
    });
  };

  // 1. sign out: the session's streams end; a bearer stream of the same token goes on
  const one = await signIn();
  const opened = await openAll(c, jobId, { cookie: one.cookie });
  const bearer = await openStream(
    c,
    'the same token, as a bearer',
    `/v1/jobs/${jobId}/logs?follow=true&format=ndjson`,
    { token: rita.token },
  );
  t.equal(await request('/v1/session', 'DELETE', { cookie: one.cookie, 'x-rankd-csrf': one.csrf }), 204);
  await assertEnded(t, opened, Date.now(), /its dashboard session was signed out/);
  const before = bearer.body().length;
  await waitUntil('the bearer follow goes on', 5000, () => bearer.body().length > before);
  t.pass('signing out ends the session, not the token');
  bearer.close();

  // 2. the token behind a session is revoked: the session's streams end with it
  const two = await signIn();
  const again = await openAll(c, jobId, { cookie: two.cookie });
  const revoked = await c.api(`/v1/tokens/${rita.accessor}`, { method: 'DELETE' });
  const answeredAt = Date.now();
  t.equal(revoked.status, 204);
  await assertEnded(t, again, answeredAt, /its API token [0-9a-f]{16} was revoked/);
  t.equal(await request('/v1/session', 'GET', { cookie: two.cookie }), 401, 'and the session is signed out');
  await c.api(`/v1/jobs/${jobId}/cancel`, { method: 'POST', body: {} });
});

/** A WebSocket client frame (masked, as RFC 6455 requires of clients). */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  const len = payload.length;
  const head =
    len < 126
      ? Buffer.from([0x80 | opcode, 0x80 | len])
      : Buffer.from([0x80 | opcode, 0x80 | 126, len >> 8, len & 0xff]);
  return Buffer.concat([head, mask, masked]);
}

t.test(
  'rankd node remove ends the agent link within 1 s, even for an agent that never answers the close',
  async (t) => {
    const f = await fleetUnderTest(t, ['rv4']);
    const c = f.controller;
    const agent = f.agents.get('rv4')!;

    // a hostile node: a real certificate over raw TLS, a hello, and then it ignores the close
    const mute = await enrollIdentity(c, 'mute');
    const u = new URL(c.url);
    const socket = tls.connect({
      host: u.hostname,
      port: Number(u.port),
      ca: mute.ca,
      cert: mute.cert,
      key: mute.key,
      servername: 'localhost',
    });
    t.teardown(() => socket.destroy());
    let received = Buffer.alloc(0);
    const socketClosed = new Promise<number>((r) => socket.on('close', () => r(Date.now())));
    socket.on('error', () => undefined);
    socket.on('data', (d: Buffer) => (received = Buffer.concat([received, d])));
    await new Promise<void>((r) => socket.once('secureConnect', () => r()));
    socket.write(
      `GET /v1/agent HTTP/1.1\r\nHost: ${u.host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Protocol: rankd.v1\r\n\r\n`,
    );
    await waitUntil('101 Switching Protocols', 5000, () => received.includes('101 Switching Protocols'));
    socket.write(
      clientFrame(
        1,
        Buffer.from(JSON.stringify({ type: 'hello', name: 'mute', version: 'test', capabilities: [], labels: {} })),
      ),
    );
    await waitUntil('welcome', 5000, () => received.includes('"welcome"'));
    t.equal((await c.api<{ connected: boolean }>('/v1/nodes/mute')).body.connected, true);

    const removed = await c.api<{ droppedLinks: number }>('/v1/nodes/mute', { method: 'DELETE' });
    const answeredAt = Date.now();
    t.equal(removed.status, 200);
    t.equal(removed.body.droppedLinks, 1);
    t.equal(
      (await c.api<{ connected: boolean }>('/v1/nodes/mute')).body.connected,
      false,
      'the registry forgets the link at once',
    );
    const cutAt = await Promise.race([socketClosed, new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
    t.ok(cutAt, 'the controller cut the socket of a node that never answered its close');
    if (cutAt)
      t.ok(
        cutAt - answeredAt <= WITHIN_MS,
        `the mute node's socket ended ${cutAt - answeredAt} ms after the answer (bound ${WITHIN_MS} ms)`,
      );
    t.ok(received.includes('node removed: its certificate was revoked'), 'a close frame (4401) was sent first');

    // a real agent with a shell open on it: the link, the shell and the agent end
    const shell = await openShell(c, c.apiToken, 'rv4');
    await waitUntil('the shell started', 10_000, () => shell.events.some((e) => e.type === 'started'));
    const gone = await c.api('/v1/nodes/rv4', { method: 'DELETE' });
    const goneAt = Date.now();
    t.equal(gone.status, 200);
    t.equal(
      (await c.api<{ connected: boolean }>('/v1/nodes/rv4')).body.connected,
      false,
      'the registry forgets the link at once',
    );
    const closed = await Promise.race([shell.closed, new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
    t.ok(
      closed && closed.at - goneAt <= WITHIN_MS,
      `the shell on the removed node closed ${closed ? closed.at - goneAt : '-'} ms after the answer`,
    );
    const exit = await Promise.race([agent.exited, new Promise<null>((r) => setTimeout(() => r(null), 15_000))]);
    t.equal(exit?.code, 77, 'the agent stops for good (exit 77)');
    t.match(agent.output(), /4401|RANKD_NODE_CERT_REVOKED/);
  },
);
