// Dashboard sessions and login codes are capped per user (issue 24, finding 4): one user
// signing in over and over, or minting code after code, evicts only that user's oldest,
// never another user's. Against a real controller over HTTPS, with real cookies.
import t from 'tap';
import https from 'node:https';
import { startController, type ControllerHandle } from '../helpers/daemons.js';
import { httpsFetch } from '../helpers/tls.js';

// api/dashboard/sessions.ts
const SESSIONS_PER_USER = 20;
const CODES_PER_USER = 10;

async function call(
  c: ControllerHandle,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown>; setCookie: string | null }> {
  const res = await httpsFetch(c.url + path, {
    ca: c.ca,
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: JSON.parse(text) as Record<string, unknown>,
    setCookie: res.headers.get('set-cookie'),
  };
}

async function signIn(c: ControllerHandle, login: { token: string } | { code: string }): Promise<string> {
  const opened = await call(c, 'POST', '/v1/session', {}, login);
  if (opened.status !== 201) throw new Error(`sign-in: ${opened.status} ${JSON.stringify(opened.body)}`);
  return `rankd_session=${/rankd_session=([^;]+)/.exec(opened.setCookie ?? '')![1]!}`;
}

async function whoIs(c: ControllerHandle, cookie: string): Promise<string | null> {
  const me = await call(c, 'GET', '/v1/session', { cookie });
  return me.status === 200 ? (me.body['user'] as string) : null;
}

async function mintCode(c: ControllerHandle, token: string): Promise<string> {
  const minted = await call(c, 'POST', '/v1/dashboard/login-codes', { authorization: `Bearer ${token}` });
  if (minted.status !== 201) throw new Error(`login code: ${minted.status}`);
  return /#login=(.+)$/.exec(minted.body['path'] as string)![1]!;
}

async function addReader(c: ControllerHandle, name: string): Promise<string> {
  const added = await c.api<{ token: string }>('/v1/users', { method: 'POST', body: { name, role: 'reader' } });
  if (added.status !== 201) throw new Error(`add ${name}: ${added.status}`);
  return added.body.token;
}

t.test('one user signing in over and over signs no other user out', async (t) => {
  const c = await startController();
  t.teardown(() => c.stop());
  const alice = await addReader(c, 'alice');
  const mallory = await addReader(c, 'mallory');

  const alicesSession = await signIn(c, { token: alice });
  const adminsSession = await signIn(c, { token: c.apiToken });
  const mallorys: string[] = [];
  for (let i = 0; i < SESSIONS_PER_USER * 3; i++) mallorys.push(await signIn(c, { token: mallory }));

  t.equal(await whoIs(c, alicesSession), 'alice', "alice's session survives mallory's 60 sign-ins");
  t.equal(await whoIs(c, adminsSession), 'admin', "so does the admin's");
  const alive = [];
  for (const cookie of mallorys) alive.push((await whoIs(c, cookie)) !== null);
  t.same(
    alive,
    [...Array(SESSIONS_PER_USER * 2).fill(false), ...Array(SESSIONS_PER_USER).fill(true)],
    `mallory keeps only her newest ${SESSIONS_PER_USER} sessions`,
  );
});

t.test('one user minting code after code voids no other user’s code', async (t) => {
  const c = await startController();
  t.teardown(() => c.stop());
  const alice = await addReader(c, 'alice');
  const mallory = await addReader(c, 'mallory');

  const alicesCode = await mintCode(c, alice);
  const mallorys: string[] = [];
  for (let i = 0; i < CODES_PER_USER * 5; i++) mallorys.push(await mintCode(c, mallory));

  t.equal(
    await whoIs(c, await signIn(c, { code: alicesCode })),
    'alice',
    "alice's code still signs her in after mallory minted 50",
  );
  const oldest = await call(c, 'POST', '/v1/session', {}, { code: mallorys[0] });
  t.equal(oldest.status, 401, "mallory's oldest code was dropped");
  t.match(oldest.body, { code: 'RANKD_UNAUTHORIZED', message: /unknown, used or expired login code/ });
  t.equal(oldest.setCookie, null, 'and opened no session');
  const newest = mallorys.slice(-CODES_PER_USER);
  for (const code of newest)
    t.equal(await whoIs(c, await signIn(c, { code })), 'mallory', 'each of her newest codes still works');
  const evicted = mallorys.slice(1, -CODES_PER_USER);
  let opened = 0;
  for (const code of evicted) if ((await call(c, 'POST', '/v1/session', {}, { code })).status === 201) opened++;
  t.equal(opened, 0, `none of her ${evicted.length + 1} older codes opens a session`);
});

t.test("a session evicted by its user's cap has its open event stream ended at once", async (t) => {
  const c = await startController();
  t.teardown(() => c.stop());
  const mallory = await addReader(c, 'mallory');
  const first = await signIn(c, { token: mallory });
  const u = new URL(c.url);
  const stream = await new Promise<{ body: () => string; ended: Promise<number> }>((resolve, reject) => {
    const req = https.request(
      { host: u.hostname, port: u.port, path: '/v1/events', ca: c.ca, headers: { cookie: first }, agent: false },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`events: ${res.statusCode}`));
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        resolve({ body: () => body, ended: new Promise((done) => res.on('close', () => done(Date.now()))) });
      },
    );
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy());
    req.end();
  });
  // the first session is her oldest: the sign-in that makes her 21st evicts it
  for (let i = 0; i < SESSIONS_PER_USER - 1; i++) await signIn(c, { token: mallory });
  t.equal(await whoIs(c, first), 'mallory', 'still signed in at the cap');
  const evictedAt = Date.now();
  await signIn(c, { token: mallory });
  const endedAt = await Promise.race([stream.ended, new Promise<number>((r) => setTimeout(() => r(-1), 5_000))]);
  t.not(endedAt, -1, "the evicted session's /v1/events stream ended");
  t.ok(endedAt - evictedAt < 1_000, `within 1 s of the sign-in that evicted it (${endedAt - evictedAt} ms)`);
  t.match(
    stream.body(),
    /event: revoked\ndata: .*RANKD_CREDENTIAL_REVOKED.*more than the sessions a user may hold/,
    'with a last revoked event that says why',
  );
  t.equal(await whoIs(c, first), null, 'and the session is gone');
});
