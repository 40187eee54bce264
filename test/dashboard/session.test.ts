// The dashboard's sign-in and session over plain HTTPS, against a real controller: one-time
// login codes, the cookie's attributes, CSRF on state-changing requests, revocation, bad
// input, and the change events a session follows.
import t from 'tap';
import {
  runCli,
  startAgent,
  startController,
  waitForNode,
  waitUntil,
  type ControllerHandle,
} from '../helpers/daemons.js';
import { httpsFetch } from '../helpers/tls.js';

interface Answer {
  status: number;
  body: Record<string, unknown>;
  setCookie: string | null;
}

/** One request with explicit headers (a cookie, a CSRF token), none added for us. */
async function call(
  c: ControllerHandle,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Answer> {
  const res = await httpsFetch(c.url + path, {
    ca: c.ca,
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { text };
  }
  return { status: res.status, body: parsed, setCookie: res.headers.get('set-cookie') };
}

const cookieOf = (setCookie: string | null): string => /rankd_session=([^;]+)/.exec(setCookie ?? '')![1]!;

async function loginCode(c: ControllerHandle, token = c.apiToken): Promise<string> {
  const minted = await call(c, 'POST', '/v1/dashboard/login-codes', { authorization: `Bearer ${token}` });
  if (minted.status !== 201) throw new Error(`login code: ${minted.status} ${JSON.stringify(minted.body)}`);
  return /#login=(.+)$/.exec(minted.body['path'] as string)![1]!;
}

t.test('dashboard sessions', async (t) => {
  const c = await startController({ extra: ['--max-jobs-per-user', '100'] });
  t.teardown(() => c.stop());

  t.test('rankd dashboard prints a one-time URL on the controller', async (t) => {
    const r = await runCli(['dashboard'], c.clientEnv);
    t.equal(r.code, 0, r.stderr);
    const url = new URL(r.stdout.trim());
    t.equal(url.origin, new URL(c.url).origin);
    t.equal(url.pathname, '/ui/');
    t.match(url.hash, /^#login=[A-Za-z0-9_-]{43}$/, 'the code rides in the fragment, which browsers never send');
    t.match(r.stderr, /one sign-in, until/);
    const code = url.hash.slice('#login='.length);
    const first = await call(c, 'POST', '/v1/session', {}, { code });
    t.equal(first.status, 201, JSON.stringify(first.body));
    t.equal(first.body['user'], 'admin');
    const again = await call(c, 'POST', '/v1/session', {}, { code });
    t.equal(again.status, 401, 'a code signs in once');
    t.match(again.body['message'], /unknown, used or expired login code/);
    const audit = await c.api<{
      entries: { route: string; method: string; user: string | null; decision: string; status: number }[];
    }>('/v1/audit');
    const signIns = audit.body.entries.filter((e) => e.route === '/v1/session' && e.method === 'POST');
    t.same(
      signIns.map((e) => [e.user, e.decision, e.status]),
      [
        ['admin', 'allow', 201],
        [null, 'deny', 401],
      ],
      'the sign-in and the refused second use are both in the audit log',
    );
  });

  t.test('the cookie is HttpOnly, Secure, SameSite=Strict and stands for the token that opened it', async (t) => {
    const opened = await call(c, 'POST', '/v1/session', {}, { code: await loginCode(c) });
    t.match(opened.setCookie, /HttpOnly/);
    t.match(opened.setCookie, /Secure/);
    t.match(opened.setCookie, /SameSite=Strict/);
    t.match(opened.setCookie, /Path=\//);
    const cookie = `rankd_session=${cookieOf(opened.setCookie)}`;
    const me = await call(c, 'GET', '/v1/session', { cookie });
    t.equal(me.status, 200);
    t.equal(me.body['user'], 'admin');
    t.equal(me.body['csrf'], opened.body['csrf'], 'the session answers its CSRF token to its own page');
    t.equal((me.body['grants'] as Record<string, string>)['jobs.control'], 'all');
    const nodes = await call(c, 'GET', '/v1/nodes', { cookie });
    t.equal(nodes.status, 200, 'API reads work with the cookie alone');
    const wrongToken = await call(c, 'GET', '/v1/nodes', { cookie, authorization: 'Bearer rankd_nope' });
    t.equal(wrongToken.status, 401, 'a wrong bearer token is refused, not replaced by the cookie');
    const garbage = await call(c, 'GET', '/v1/nodes', { cookie: 'rankd_session=%%%garbage' });
    t.equal(garbage.status, 401);
  });

  t.test('state-changing requests need the CSRF token; sign-out ends the session', async (t) => {
    const opened = await call(c, 'POST', '/v1/session', {}, { code: await loginCode(c) });
    const cookie = `rankd_session=${cookieOf(opened.setCookie)}`;
    const csrf = opened.body['csrf'] as string;
    const body = { command: ['true'], placement: { ntasks: 1 } };
    const without = await call(c, 'POST', '/v1/jobs', { cookie }, body);
    t.equal(without.status, 403);
    t.equal(without.body['code'], 'RANKD_CSRF_REJECTED');
    const wrong = await call(c, 'POST', '/v1/jobs', { cookie, 'x-rankd-csrf': csrf.slice(1) + 'x' }, body);
    t.equal(wrong.body['code'], 'RANKD_CSRF_REJECTED');
    // no agent: the submission passes authorization and is refused by the planner instead
    const right = await call(c, 'POST', '/v1/jobs', { cookie, 'x-rankd-csrf': csrf }, body);
    t.not(right.status, 403, JSON.stringify(right.body));
    const out = await call(c, 'DELETE', '/v1/session', { cookie, 'x-rankd-csrf': csrf });
    t.equal(out.status, 204);
    t.match(out.setCookie, /rankd_session=;/);
    t.equal((await call(c, 'GET', '/v1/session', { cookie })).status, 401, 'the session is gone');
  });

  t.test('revoking the token signs its browsers out on the next request', async (t) => {
    const added = await call(
      c,
      'POST',
      '/v1/users',
      { authorization: `Bearer ${c.apiToken}` },
      { name: 'watcher', role: 'reader' },
    );
    t.equal(added.status, 201, JSON.stringify(added.body));
    const token = added.body['token'] as string;
    const opened = await call(c, 'POST', '/v1/session', {}, { token });
    t.equal(opened.status, 201, 'a pasted API token opens a session too');
    t.equal(opened.body['role'], 'reader');
    t.notOk((opened.body['grants'] as Record<string, string>)['jobs.control'], 'a reader may not cancel');
    const cookie = `rankd_session=${cookieOf(opened.setCookie)}`;
    t.equal((await call(c, 'GET', '/v1/nodes', { cookie })).status, 200);
    const removed = await call(c, 'DELETE', '/v1/users/watcher', { authorization: `Bearer ${c.apiToken}` });
    t.equal(removed.status, 204, JSON.stringify(removed.body));
    t.equal((await call(c, 'GET', '/v1/nodes', { cookie })).status, 401);
  });

  t.test('bad sign-in input is a clear refusal', async (t) => {
    const badJson = await call(c, 'POST', '/v1/session', {}, '{"code":');
    t.equal(badJson.status, 400);
    const both = await call(c, 'POST', '/v1/session', {}, { code: 'a', token: 'b' });
    t.equal(both.status, 400);
    t.equal(both.body['code'], 'RANKD_INVALID_REQUEST');
    const huge = await call(c, 'POST', '/v1/session', {}, { code: 'x'.repeat(300) });
    t.equal(huge.status, 400);
    const wrongToken = await call(c, 'POST', '/v1/session', {}, { token: 'rankd_not-a-token' });
    t.equal(wrongToken.status, 401);
    const noToken = await call(c, 'POST', '/v1/dashboard/login-codes');
    t.equal(noToken.status, 401, 'minting a code needs a token');
  });

  t.test('the dashboard files are served with a strict CSP; / leads there', async (t) => {
    const index = await httpsFetch(`${c.url}/ui/`, { ca: c.ca });
    t.equal(index.status, 200);
    t.match(index.headers.get('content-security-policy'), /default-src 'self'; script-src 'self'/);
    t.equal(index.headers.get('cache-control'), 'no-cache');
    const html = await index.text();
    const js = /src="\/ui\/(app-[A-Z0-9]{8}\.js)"/.exec(html)?.[1];
    t.ok(js, 'index.html names a hashed bundle');
    const bundle = await httpsFetch(`${c.url}/ui/${js}`, { ca: c.ca, headers: { 'accept-encoding': 'gzip' } });
    t.equal(bundle.status, 200);
    t.equal(bundle.headers.get('content-encoding'), 'gzip', 'served precompressed');
    t.match(bundle.headers.get('cache-control'), /immutable/);
    await bundle.text();
    const root = await httpsFetch(`${c.url}/`, { ca: c.ca });
    t.equal(root.status, 302);
    t.equal(root.headers.get('location'), '/ui/');
  });

  t.test('GET /v1/events names changed nodes and jobs, and a user hears only of its own jobs', async (t) => {
    const agent = startAgent(c, { name: 'ev1' });
    t.teardown(() => agent.stop());
    const user = await call(
      c,
      'POST',
      '/v1/users',
      { authorization: `Bearer ${c.apiToken}` },
      {
        name: 'alice',
        role: 'user',
        unixUser:
          process.env['USER'] === 'root' || process.getuid?.() === 0 ? 'nobody' : (process.env['USER'] ?? 'nobody'),
      },
    );
    t.equal(user.status, 201, JSON.stringify(user.body));
    const follow = async (token: string) => {
      const res = await httpsFetch(`${c.url}/v1/events`, {
        ca: c.ca,
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(30_000),
      });
      t.equal(res.headers.get('content-type'), 'text/event-stream');
      const reader = res.body.getReader();
      let text = '';
      void (async () => {
        for (;;) {
          const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
          if (done) return;
          text += Buffer.from(value!).toString('utf8');
        }
      })();
      return { text: () => text, close: () => reader.cancel().catch(() => {}) };
    };
    const admin = await follow(c.apiToken);
    const alice = await follow(user.body['token'] as string);
    t.teardown(() => (admin.close(), alice.close()));
    await waitForNode(c, 'ev1', 'ready');
    await waitUntil('a node event for ev1', 10_000, () => admin.text().includes('event: node\ndata: {"name":"ev1"}'));
    const job = await c.api<{ id: string }>('/v1/jobs', {
      method: 'POST',
      body: { command: ['true'], placement: { ntasks: 1 } },
    });
    t.equal(job.status, 201, JSON.stringify(job.body));
    await waitUntil('a job event', 10_000, () => admin.text().includes(`event: job\ndata: {"id":"${job.body.id}"}`));
    await new Promise((r) => setTimeout(r, 300));
    t.notMatch(alice.text(), job.body.id, "a user does not hear of other users' jobs");
    t.match(alice.text(), 'event: node', 'but does hear of nodes');
  });
});

t.test('a session outlives a controller restart; its id is not in the store', async (t) => {
  const first = await startController();
  const code = await loginCode(first);
  const opened = await call(first, 'POST', '/v1/session', {}, { code });
  t.equal(opened.status, 201, JSON.stringify(opened.body));
  const cookie = `rankd_session=${cookieOf(opened.setCookie)}`;
  const csrf = opened.body['csrf'] as string;
  await first.stop();

  const again = await startController({ dataDir: first.dataDir });
  t.teardown(() => again.stop());
  const me = await call(again, 'GET', '/v1/session', { cookie });
  t.equal(me.status, 200, 'the restarted controller knows the session');
  t.equal(me.body['user'], 'admin');
  t.equal(me.body['csrf'], csrf, 'with the same CSRF token, which it derives again from the id');
  const db = (await import('better-sqlite3')).default(`${first.dataDir}/rankd.db`, { readonly: true });
  const stored = JSON.stringify(db.prepare('SELECT * FROM dashboard_sessions').all());
  db.close();
  t.notMatch(stored, cookieOf(opened.setCookie), 'the store holds no session id');
  t.notMatch(stored, csrf, 'nor its CSRF token');
  const out = await call(again, 'DELETE', '/v1/session', { cookie, 'x-rankd-csrf': csrf });
  t.equal(out.status, 204, 'signing out needs the CSRF token, and it is still good');
  t.equal((await call(again, 'GET', '/v1/session', { cookie })).status, 401, 'then the session is gone');
});
